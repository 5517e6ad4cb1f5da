package cache

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache/sigkey"
)

// TestSigning: signed entries verify; with require_signed, unsigned and
// wrongly signed entries are misses (from the remote: TestRemoteSigning
// in package remote), a signed put replaces an unsigned entry, and
// unsigned readers still read signed entries.
func TestSigning(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cache")
	open := func(o Options) *Dir {
		c, err := OpenWith(root, o)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	key := []byte("team key")
	plain := open(Options{})
	e := putSample(t, plain)
	if err := plain.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	strict := open(Options{SigningKey: key, RequireSigned: true})
	if _, err := strict.GetEntry(e.Key); !errors.Is(err, ErrUntrusted) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("unsigned entry under require_signed: %v, want untrusted miss", err)
	}
	forger := open(Options{SigningKey: []byte("not the team key")})
	if err := os.Remove(plain.entryPath(e.Key)); err != nil {
		t.Fatal(err)
	}
	if err := forger.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	if _, err := strict.GetEntry(e.Key); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("entry signed with another key: %v, want untrusted", err)
	}
	// The team's writer replaces it; now the strict reader hits.
	if err := strict.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	if _, err := strict.GetEntry(e.Key); err != nil {
		t.Fatalf("after a signed put: %v", err)
	}
	if _, err := plain.GetEntry(e.Key); err != nil {
		t.Fatalf("a reader that does not check signatures: %v", err)
	}
	_, b, err := strict.ReadEntryBytes(e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if !strict.Signed(b) || forger.Signed(b) {
		t.Errorf("Signed: team %v forger %v", strict.Signed(b), forger.Signed(b))
	}
	if _, err := DecodeEntry(b); err != nil {
		t.Errorf("a signed entry does not decode: %v", err)
	}
	// A tampered signature line is corrupt, not merely untrusted.
	bad := bytes.Replace(b, []byte(sigPrefix), []byte("sig hmac-sha256 zz"), 1)
	if _, err := DecodeEntry(bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("malformed signature line: %v", err)
	}

	if _, err := OpenWith(t.TempDir(), Options{RequireSigned: true}); err == nil {
		t.Error("require_signed without a key was accepted")
	}
}

// signedSample stores a variant n of the sample entry in c (its blobs and
// the entry, which c signs as it is configured to) and returns it.
func signedSample(t *testing.T, c *Dir, n string) *Entry {
	t.Helper()
	e := putSample(t, c)
	e.Components = append(slices.Clone(e.Components), Component{Kind: "param", Name: "writer", Value: n})
	e.Key = ComputeKey(e.Components)
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	return e
}

func newKey(t *testing.T, comment string) *sigkey.PrivateKey {
	t.Helper()
	k, err := sigkey.GenerateKey(comment)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestWriterKeys: three writers on one directory (one signing with a
// trusted key, one with another key, one not signing); a reader that
// trusts the first key gets only its entries, names their signer, and
// takes the others as misses with a warning; a reader with no policy
// reads all three; a signed entry changed after signing is corrupt for
// every reader, and one re-signed by another key is untrusted.
func TestWriterKeys(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cache")
	open := func(o Options) *Dir {
		t.Helper()
		c, err := OpenWith(root, o)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ci, mallory := newKey(t, "ci@build"), newKey(t, "mallory")
	trusted := signedSample(t, open(Options{WriterKey: ci}), "ci")
	other := signedSample(t, open(Options{WriterKey: mallory}), "mallory")
	unsigned := signedSample(t, open(Options{}), "nobody")

	var warnings []string
	reader := open(Options{TrustedKeys: []*sigkey.PublicKey{ci.Public()}, Warn: func(m string) { warnings = append(warnings, m) }})
	got, err := reader.GetEntry(trusted.Key)
	if err != nil {
		t.Fatalf("entry by the trusted writer: %v", err)
	}
	if got.SignedBy == nil || got.SignedBy.String() != ci.Public().String() || got.SignedBy.Comment != "ci@build" {
		t.Errorf("SignedBy = %v, want %v", got.SignedBy, ci.Public())
	}
	for _, tc := range []struct {
		name string
		e    *Entry
		want string
	}{
		{"other key", other, "signed by " + mallory.Public().Fingerprint() + ", which is not a trusted key"},
		{"unsigned", unsigned, "not signed by a writer's key"},
	} {
		_, err := reader.GetEntry(tc.e.Key)
		if !errors.Is(err, ErrUntrusted) || !errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want an untrusted miss", tc.name, err)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it to say %q", tc.name, err, tc.want)
		}
		if _, err := os.Stat(reader.entryPath(tc.e.Key)); err != nil {
			t.Errorf("%s: the entry left its place: %v", tc.name, err)
		}
	}
	reader.GetEntry(other.Key) // a second lookup warns no more
	wantWarn := []string{
		"warning: cache entry " + other.Key.Short() + " is not used: untrusted entry: signed by " + mallory.Public().Fingerprint() + ", which is not a trusted key; the phase runs again",
		"warning: cache entry " + unsigned.Key.Short() + " is not used: untrusted entry: not signed by a writer's key; the phase runs again",
	}
	if diff := cmp.Diff(wantWarn, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}

	// The reader reruns the unsigned phase and stores its own unsigned
	// result: no better by its policy, so the other writer's stays.
	if err := reader.PutEntry(unsigned); err != nil {
		t.Fatal(err)
	}
	if q := listDir(t, filepath.Join(root, QuarantineDir)); len(q) != 0 {
		t.Errorf("an untrusting reader's put moved %q to quarantine", q)
	}

	plain := open(Options{})
	for _, e := range []*Entry{trusted, other, unsigned} {
		got, err := plain.GetEntry(e.Key)
		if err != nil {
			t.Errorf("reader without a policy: %v", err)
			continue
		}
		if e == other && (got.SignedBy == nil || got.SignedBy.String() != mallory.Public().Fingerprint()) {
			t.Errorf("SignedBy of an untrusted signer = %v, want its fingerprint alone", got.SignedBy)
		}
	}

	// Tampering: a changed body with a checksum to match is caught by the
	// signature, for every reader, and quarantined.
	_, b, err := reader.ReadEntryBytes(trusted.Key)
	if err != nil {
		t.Fatal(err)
	}
	inner, _, err := openEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	forged := *trusted
	forged.Outputs = slices.Clone(trusted.Outputs)
	forged.Outputs[3].Digest = HashBytes([]byte("weights")) // metrics.json now restores as another blob
	forgedInner, err := EncodeEntry(&forged)
	if err != nil {
		t.Fatal(err)
	}
	tampered := append(bytes.Clone(b[:len(b)-len(inner)]), forgedInner...)
	if _, err := DecodeEntry(tampered); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "changed after it was signed") {
		t.Errorf("tampered entry: %v, want corrupt: changed after it was signed", err)
	}
	if _, err := reader.CheckEntry(trusted.Key, tampered); err == nil {
		t.Error("CheckEntry accepted a tampered entry")
	}
	p := reader.entryPath(trusted.Key)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, tampered, 0o444); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.GetEntry(trusted.Key); !errors.Is(err, ErrCorrupt) {
		t.Errorf("tampered entry, reader without a policy: %v, want corrupt", err)
	}
	if q := listDir(t, filepath.Join(root, QuarantineDir)); len(q) != 1 {
		t.Errorf("quarantine/ holds %q, want the tampered entry", q)
	}
	// Re-signed by another key, it is whole but untrusted.
	resigned := sealEnvelope(forgedInner, mallory)
	if _, err := reader.CheckEntry(trusted.Key, resigned); !errors.Is(err, ErrUntrusted) {
		t.Errorf("entry re-signed by another key: %v, want untrusted", err)
	}
}

// TestWriterKeyAndTeamKey: an entry may carry both signatures; with both
// policies, it must pass both.
func TestWriterKeyAndTeamKey(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cache")
	open := func(o Options) *Dir {
		t.Helper()
		c, err := OpenWith(root, o)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	alice := newKey(t, "alice")
	team := []byte("team key")
	both := signedSample(t, open(Options{WriterKey: alice, SigningKey: team}), "both")
	onlyWriter := signedSample(t, open(Options{WriterKey: alice}), "writer")
	onlyTeam := signedSample(t, open(Options{SigningKey: team}), "team")
	strict := open(Options{SigningKey: team, RequireSigned: true, TrustedKeys: []*sigkey.PublicKey{alice.Public()}})
	for _, tc := range []struct {
		e  *Entry
		ok bool
	}{{both, true}, {onlyWriter, false}, {onlyTeam, false}} {
		_, err := strict.GetEntry(tc.e.Key)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.e.Components[len(tc.e.Components)-1].Value, err, tc.ok)
		}
	}
	_, b, err := strict.ReadEntryBytes(both.Key)
	if err != nil {
		t.Fatal(err)
	}
	if !strict.Signed(b) || strict.Signer(b).String() != alice.Public().String() {
		t.Errorf("Signed %v, Signer %v", strict.Signed(b), strict.Signer(b))
	}
}

// FuzzOpenEnvelope checks that openEnvelope never panics and never
// accepts an envelope inside an envelope.
func FuzzOpenEnvelope(f *testing.F) {
	k, err := sigkey.GenerateKey("alice@laptop")
	if err != nil {
		f.Fatal(err)
	}
	if b, err := EncodeEntry(sampleEntry()); err == nil {
		f.Add(sealEnvelope(b, k))
	}
	f.Add([]byte(envelopeHeader + edSigPrefix + "AAAA AAAA\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if inner, pub, err := openEnvelope(b); err == nil && pub != nil && bytes.HasPrefix(inner, []byte(envelopeHeader)) {
			t.Fatalf("an envelope inside an envelope was accepted: %q", b)
		}
	})
}
