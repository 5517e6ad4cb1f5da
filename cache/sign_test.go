package cache

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
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
