package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// memRemote is an in-memory Remote that records the order of uploads and
// can be told to serve wrong bytes.
type memRemote struct {
	mu      sync.Mutex
	cas     map[Digest][]byte
	ac      map[ActionID][]byte
	log     []string // "cas <short>" / "ac <short>" in upload order
	gets    int
	badBlob func(d Digest, b []byte) []byte // rewrites served blobs
	down    bool
}

func newMemRemote() *memRemote {
	return &memRemote{cas: map[Digest][]byte{}, ac: map[ActionID][]byte{}}
}

var errDown = errors.New("connection refused")

func (m *memRemote) OpenBlob(_ context.Context, d Digest) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	if m.down {
		return nil, errDown
	}
	b, ok := m.cas[d]
	if !ok {
		return nil, ErrNotFound
	}
	if m.badBlob != nil {
		b = m.badBlob(d, b)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (m *memRemote) HasBlob(_ context.Context, d Digest) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return false, errDown
	}
	_, ok := m.cas[d]
	return ok, nil
}

func (m *memRemote) PutBlob(_ context.Context, d Digest, size int64, open func() (io.ReadCloser, error)) error {
	r, err := open()
	if err != nil {
		return err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if int64(len(b)) != size || HashBytes(b) != d {
		return fmt.Errorf("bad upload of %s", d.Short())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errDown
	}
	m.cas[d] = b
	m.log = append(m.log, "cas "+d.Short())
	return nil
}

func (m *memRemote) GetEntry(_ context.Context, key ActionID) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	if m.down {
		return nil, errDown
	}
	b, ok := m.ac[key]
	if !ok {
		return nil, ErrNotFound
	}
	return bytes.Clone(b), nil
}

func (m *memRemote) PutEntry(_ context.Context, key ActionID, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errDown
	}
	m.ac[key] = bytes.Clone(b)
	m.log = append(m.log, "ac "+key.Short())
	return nil
}

func (m *memRemote) String() string { return "mem://remote" }

func openWith(t *testing.T, o Options) *Dir {
	t.Helper()
	c, err := OpenWith(filepath.Join(t.TempDir(), "cache"), o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRemoteRoundTrip: a put uploads blobs before the entry; a second cache
// with nothing local gets the entry and its blobs from the remote, verified.
func TestRemoteRoundTrip(t *testing.T) {
	r := newMemRemote()
	a := openWith(t, Options{Remote: r})
	e := putSample(t, a)
	if err := a.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	// Blobs first, entry last.
	if n := len(r.log); n == 0 || r.log[n-1] != "ac "+e.Key.Short() {
		t.Fatalf("upload order %v: the entry must come last", r.log)
	}
	if got, want := len(r.cas), len(entryRefs(e)); got != want {
		t.Fatalf("remote holds %d blobs, want %d", got, want)
	}

	b := openWith(t, Options{Remote: r})
	got, err := b.GetEntry(e.Key)
	if err != nil {
		t.Fatalf("second cache: %v", err)
	}
	if diff := cmp.Diff(e.Outputs, got.Outputs); diff != "" {
		t.Fatalf("outputs differ (-want +got):\n%s", diff)
	}
	for _, ref := range entryRefs(e) {
		if !b.HasBlob(ref.d) {
			t.Errorf("blob %s was not stored locally", ref.d.Short())
		}
	}
	if st := b.RemoteStats(); st.Hits != 1 || st.BlobsDown != int64(len(entryRefs(e))) {
		t.Errorf("stats %+v", st)
	}
	// Now local: the remote is not asked again.
	before := r.gets
	if _, err := b.GetEntry(e.Key); err != nil {
		t.Fatal(err)
	}
	if r.gets != before {
		t.Errorf("a local hit asked the remote")
	}
}

// TestRemoteInlineEntry: an entry holding blobs inline travels whole;
// only the blobs it does not hold go to and come from the remote.
func TestRemoteInlineEntry(t *testing.T) {
	r := newMemRemote()
	a := openWith(t, Options{Remote: r})
	e := sampleInlineEntry() // weights and stdout inline
	for _, b := range [][]byte{nil, []byte("stderr")} {
		if _, err := a.PutBytes(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	if len(r.cas) != 2 {
		t.Errorf("remote holds %d blobs, want the 2 not inline", len(r.cas))
	}
	for _, b := range [][]byte{[]byte("weights"), []byte("stdout")} {
		if _, ok := r.cas[HashBytes(b)]; ok {
			t.Errorf("inline blob %q was uploaded", b)
		}
	}
	b := openWith(t, Options{Remote: r})
	got, err := b.GetEntry(e.Key)
	if err != nil {
		t.Fatalf("second cache: %v", err)
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("entry from the remote (-want +got):\n%s", diff)
	}
	if out, err := b.ReadEntryBlob(got, got.Stdout); err != nil || string(out) != "stdout" {
		t.Errorf("stdout from the remote's entry = %q, %v", out, err)
	}
}

// TestRemoteBadBlobs: blobs served with wrong bytes never reach the local
// cache, and the lookup is a miss.
func TestRemoteBadBlobs(t *testing.T) {
	cases := map[string]func(Digest, []byte) []byte{
		"flipped":   func(_ Digest, b []byte) []byte { b = bytes.Clone(b); b[0] ^= 1; return b },
		"truncated": func(_ Digest, b []byte) []byte { return b[:len(b)/2] },
		"appended":  func(_ Digest, b []byte) []byte { return append(bytes.Clone(b), 'x') },
		"empty":     func(Digest, []byte) []byte { return nil },
		"other":     func(Digest, []byte) []byte { return []byte("another valid blob") },
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			r := newMemRemote()
			a := openWith(t, Options{Remote: r})
			e := putSample(t, a)
			if err := a.PutEntry(e); err != nil {
				t.Fatal(err)
			}
			r.badBlob = bad
			var warned []string
			b := openWith(t, Options{Remote: r, Warn: func(m string) { warned = append(warned, m) }})
			if _, err := b.GetEntry(e.Key); !errors.Is(err, ErrNotFound) {
				t.Fatalf("GetEntry = %v, want a miss", err)
			}
			for _, ref := range entryRefs(e) {
				if b.HasBlob(ref.d) {
					t.Errorf("bad blob %s entered the local cache", ref.d.Short())
				}
			}
			if _, err := b.GetLocalEntry(e.Key); !errors.Is(err, ErrNotFound) {
				t.Errorf("entry stored locally without its blobs: %v", err)
			}
			if len(warned) == 0 {
				t.Errorf("no warning about the bad remote blob")
			}
			if names := listDir(t, filepath.Join(b.Root(), tmpDir)); len(names) != 0 {
				t.Errorf("temp files left: %v", names)
			}
		})
	}
}

// TestRemoteBadEntry: entries that are corrupt or stored under another key
// are misses and are not stored.
func TestRemoteBadEntry(t *testing.T) {
	r := newMemRemote()
	a := openWith(t, Options{Remote: r})
	e := putSample(t, a)
	if err := a.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	good := r.ac[e.Key]
	other := ComputeKey([]Component{{Kind: "command", Value: "other"}})
	r.ac[other] = good // a valid entry under the wrong key
	flipped := bytes.Clone(good)
	flipped[len(flipped)-3] ^= 1
	r.ac[e.Key] = flipped
	b := openWith(t, Options{Remote: r})
	for _, k := range []ActionID{e.Key, other} {
		if _, err := b.GetEntry(k); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetEntry(%s) = %v, want a miss", k.Short(), err)
		}
		if _, err := os.Lstat(b.entryPath(k)); err == nil {
			t.Errorf("bad remote entry %s stored locally", k.Short())
		}
	}
	if st := b.RemoteStats(); st.Rejected != 2 {
		t.Errorf("rejected %d, want 2", st.Rejected)
	}
}

// TestRemoteReadOnlyAndDown: a read-only cache uploads nothing; a remote
// that is down makes puts and gets work locally.
func TestRemoteReadOnlyAndDown(t *testing.T) {
	r := newMemRemote()
	a := openWith(t, Options{Remote: r, RemoteReadOnly: true})
	e := putSample(t, a)
	if err := a.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	if len(r.log) != 0 {
		t.Fatalf("read-only cache uploaded %v", r.log)
	}
	r.down = true
	var warned []string
	b := openWith(t, Options{Remote: r, Warn: func(m string) { warned = append(warned, m) }})
	e2 := putSample(t, b)
	if err := b.PutEntry(e2); err != nil {
		t.Fatalf("put with the remote down: %v", err)
	}
	if _, err := b.GetEntry(e2.Key); err != nil {
		t.Fatalf("local get with the remote down: %v", err)
	}
	other := ComputeKey([]Component{{Kind: "command", Value: "x"}})
	if _, err := b.GetEntry(other); !errors.Is(err, ErrNotFound) {
		t.Fatalf("miss with the remote down = %v", err)
	}
	if len(warned) != 1 || b.RemoteStats().UploadErrors != 1 {
		t.Errorf("warnings %q, stats %+v: want one upload warning", warned, b.RemoteStats())
	}
}

// TestSigning: signed entries verify; with require_signed, unsigned and
// wrongly signed entries are misses (locally and from the remote), a
// signed put replaces an unsigned entry, and unsigned readers still read
// signed entries.
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

	// From the remote: an unsigned entry is rejected by a strict reader.
	r := newMemRemote()
	up := openWith(t, Options{Remote: r})
	e2 := putSample(t, up)
	if err := up.PutEntry(e2); err != nil {
		t.Fatal(err)
	}
	down := openWith(t, Options{Remote: r, SigningKey: key, RequireSigned: true})
	if _, err := down.GetEntry(e2.Key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unsigned remote entry under require_signed: %v", err)
	}
	if _, err := OpenWith(t.TempDir(), Options{RequireSigned: true}); err == nil {
		t.Error("require_signed without a key was accepted")
	}
}

// endlessRemote serves every blob as a stream that never ends, counting
// what was read from it.
type endlessRemote struct {
	*memRemote
	read atomic.Int64
}

func (m *endlessRemote) OpenBlob(_ context.Context, d Digest) (io.ReadCloser, error) {
	return io.NopCloser(readFunc(func(p []byte) (int, error) {
		for i := range p {
			p[i] = 'z'
		}
		m.read.Add(int64(len(p)))
		return len(p), nil
	})), nil
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

// TestRemoteEndlessBlob: a server that streams an output blob without end
// is cut off just past the size the entry records, and nothing is stored.
func TestRemoteEndlessBlob(t *testing.T) {
	r := newMemRemote()
	a := openWith(t, Options{Remote: r})
	e := putSample(t, a)
	e.Stdout, e.Stderr = Digest{}, Digest{} // only sized output blobs
	if err := a.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	var largest int64
	for _, o := range e.Outputs {
		largest = max(largest, o.Size)
	}
	er := &endlessRemote{memRemote: r}
	b := openWith(t, Options{Remote: er, Warn: func(string) {}})
	if _, err := b.GetEntry(e.Key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetEntry = %v, want a miss", err)
	}
	// put reads in chunks, so allow one buffer beyond size+1.
	if got := er.read.Load(); got > largest+1+1<<20 {
		t.Errorf("read %d bytes of an endless blob whose entry records at most %d", got, largest)
	}
	if names := listDir(t, filepath.Join(b.Root(), tmpDir)); len(names) != 0 {
		t.Errorf("temp files left: %v", names)
	}
}
