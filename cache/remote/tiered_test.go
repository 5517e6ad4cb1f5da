package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/google/go-cmp/cmp"
)

// memRemote is an in-memory Remote that records the order of uploads and
// can be told to serve wrong bytes.
type memRemote struct {
	mu      sync.Mutex
	cas     map[cache.Digest][]byte
	ac      map[cache.ActionID][]byte
	log     []string // "cas <short>" / "ac <short>" in upload order
	gets    int
	badBlob func(d cache.Digest, b []byte) []byte // rewrites served blobs
	down    bool
}

func newMemRemote() *memRemote {
	return &memRemote{cas: map[cache.Digest][]byte{}, ac: map[cache.ActionID][]byte{}}
}

var errDown = errors.New("connection refused")

func (m *memRemote) OpenBlob(_ context.Context, d cache.Digest) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	if m.down {
		return nil, errDown
	}
	b, ok := m.cas[d]
	if !ok {
		return nil, cache.ErrNotFound
	}
	if m.badBlob != nil {
		b = m.badBlob(d, b)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (m *memRemote) HasBlob(_ context.Context, d cache.Digest) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return false, errDown
	}
	_, ok := m.cas[d]
	return ok, nil
}

func (m *memRemote) PutBlob(_ context.Context, d cache.Digest, size int64, open func() (io.ReadCloser, error)) error {
	r, err := open()
	if err != nil {
		return err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if int64(len(b)) != size || cache.HashBytes(b) != d {
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

func (m *memRemote) GetEntry(_ context.Context, key cache.ActionID) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	if m.down {
		return nil, errDown
	}
	b, ok := m.ac[key]
	if !ok {
		return nil, cache.ErrNotFound
	}
	return bytes.Clone(b), nil
}

func (m *memRemote) PutEntry(_ context.Context, key cache.ActionID, b []byte) error {
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

// tieredOptions is how a test opens a tiered cache: the local
// directory's options, and the remote level's.
type tieredOptions struct {
	cache.Options
	Remote         Backend
	RemoteReadOnly bool
}

func openWith(t *testing.T, o tieredOptions) *Tiered {
	t.Helper()
	c, err := cache.OpenWith(filepath.Join(t.TempDir(), "cache"), o.Options)
	if err != nil {
		t.Fatal(err)
	}
	return NewTiered(c, o.Remote, o.RemoteReadOnly, o.Warn)
}

// putSample stores the blobs of sampleEntry in c and returns the entry.
func putSample(t *testing.T, c *Tiered) *cache.Entry {
	t.Helper()
	for _, b := range [][]byte{[]byte("weights"), nil, []byte("stdout"), []byte("stderr")} {
		if _, err := c.PutBytes(b); err != nil {
			t.Fatal(err)
		}
	}
	return sampleEntry()
}

func sampleEntry() *cache.Entry {
	comps := []cache.Component{
		{Kind: "command", Value: "python train.py"},
		{Kind: "input", Name: "data/train.csv", Value: "0644 " + cache.HashBytes([]byte("csv")).String()},
		{Kind: "param", Name: "lr", Value: "0.01"},
	}
	return &cache.Entry{
		Format:     cache.EntryFormat,
		Key:        cache.ComputeKey(comps),
		Phase:      "train",
		Components: comps,
		Outputs: []cache.OutputFile{
			{Path: "model", Type: cache.TypeDir, Mode: 0o755},
			{Path: "model/weights.bin", Type: cache.TypeFile, Mode: 0o644, Digest: cache.HashBytes([]byte("weights")), Size: 7},
			{Path: "model/latest", Type: cache.TypeSymlink, Mode: 0o777, Target: "weights.bin"},
			{Path: "metrics.json", Type: cache.TypeFile, Mode: 0o644, Digest: cache.HashBytes(nil)},
		},
		ExitCode:   0,
		Stdout:     cache.HashBytes([]byte("stdout")),
		Stderr:     cache.HashBytes([]byte("stderr")),
		Cost:       1.25,
		Iterations: 300,
		Metrics:    json.RawMessage(`{"loss":0.12}`),
		DurationMS: 61234,
		Created:    time.Date(2025, 3, 1, 12, 30, 0, 0, time.UTC),
		Host:       "gpu-01",
		User:       "ana",
	}
}

// sampleInlineEntry is sampleEntry in format 2, holding its weights file
// and its stdout inline.
func sampleInlineEntry() *cache.Entry {
	e := sampleEntry()
	e.Format = cache.EntryFormatInline
	e.Inline = []cache.InlineBlob{
		{Digest: cache.HashBytes([]byte("weights")), Data: []byte("weights")},
		{Digest: cache.HashBytes([]byte("stdout")), Data: []byte("stdout")},
	}
	return e
}

// entryFile is where c stores the entry for key (FORMAT.md).
func entryFile(c *Tiered, key cache.ActionID) string {
	h := key.String()
	return filepath.Join(c.Root(), "ac", h[:2], h)
}

// tempNames lists what is left in the cache's temp directory.
func tempNames(t *testing.T, c *Tiered) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(c.Root(), "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestRemoteRoundTrip: a put uploads blobs before the entry; a second cache
// with nothing local gets the entry and its blobs from the remote, verified.
func TestRemoteRoundTrip(t *testing.T) {
	r := newMemRemote()
	a := openWith(t, tieredOptions{Remote: r})
	e := putSample(t, a)
	if err := a.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	// Blobs first, entry last.
	if n := len(r.log); n == 0 || r.log[n-1] != "ac "+e.Key.Short() {
		t.Fatalf("upload order %v: the entry must come last", r.log)
	}
	if got, want := len(r.cas), len(e.Blobs()); got != want {
		t.Fatalf("remote holds %d blobs, want %d", got, want)
	}

	b := openWith(t, tieredOptions{Remote: r})
	got, err := b.GetEntry(e.Key)
	if err != nil {
		t.Fatalf("second cache: %v", err)
	}
	if diff := cmp.Diff(e.Outputs, got.Outputs); diff != "" {
		t.Fatalf("outputs differ (-want +got):\n%s", diff)
	}
	for _, ref := range e.Blobs() {
		if !b.HasBlob(ref.Digest) {
			t.Errorf("blob %s was not stored locally", ref.Digest.Short())
		}
	}
	if st := b.RemoteStats(); st.Hits != 1 || st.BlobsDown != int64(len(e.Blobs())) {
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
	a := openWith(t, tieredOptions{Remote: r})
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
		if _, ok := r.cas[cache.HashBytes(b)]; ok {
			t.Errorf("inline blob %q was uploaded", b)
		}
	}
	b := openWith(t, tieredOptions{Remote: r})
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
	cases := map[string]func(cache.Digest, []byte) []byte{
		"flipped": func(_ cache.Digest, b []byte) []byte {
			if len(b) == 0 { // the empty log blob: nothing to flip
				return []byte{1}
			}
			b = bytes.Clone(b)
			b[0] ^= 1
			return b
		},
		"truncated": func(_ cache.Digest, b []byte) []byte { return b[:len(b)/2] },
		"appended":  func(_ cache.Digest, b []byte) []byte { return append(bytes.Clone(b), 'x') },
		"empty":     func(cache.Digest, []byte) []byte { return nil },
		"other":     func(cache.Digest, []byte) []byte { return []byte("another valid blob") },
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			r := newMemRemote()
			a := openWith(t, tieredOptions{Remote: r})
			e := putSample(t, a)
			if err := a.PutEntry(e); err != nil {
				t.Fatal(err)
			}
			r.badBlob = bad
			var (
				mu     sync.Mutex // blobs are fetched in parallel
				warned []string
			)
			b := openWith(t, tieredOptions{Remote: r, Options: cache.Options{Warn: func(m string) {
				mu.Lock()
				defer mu.Unlock()
				warned = append(warned, m)
			}}})
			if _, err := b.GetEntry(e.Key); !errors.Is(err, cache.ErrNotFound) {
				t.Fatalf("GetEntry = %v, want a miss", err)
			}
			for _, ref := range e.Blobs() {
				// No bytes are the empty blob's right content: it may
				// come in before the first bad blob stops the fetch.
				if name == "empty" && ref.Digest == cache.Digest(sha256.Sum256(nil)) {
					continue
				}
				if b.HasBlob(ref.Digest) {
					t.Errorf("bad blob %s entered the local cache", ref.Digest.Short())
				}
			}
			if _, err := b.GetLocalEntry(e.Key); !errors.Is(err, cache.ErrNotFound) {
				t.Errorf("entry stored locally without its blobs: %v", err)
			}
			if len(warned) == 0 {
				t.Errorf("no warning about the bad remote blob")
			}
			if names := tempNames(t, b); len(names) != 0 {
				t.Errorf("temp files left: %v", names)
			}
		})
	}
}

// TestRemoteBadEntry: entries that are corrupt or stored under another key
// are misses and are not stored.
func TestRemoteBadEntry(t *testing.T) {
	r := newMemRemote()
	a := openWith(t, tieredOptions{Remote: r})
	e := putSample(t, a)
	if err := a.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	good := r.ac[e.Key]
	other := cache.ComputeKey([]cache.Component{{Kind: "command", Value: "other"}})
	r.ac[other] = good // a valid entry under the wrong key
	flipped := bytes.Clone(good)
	flipped[len(flipped)-3] ^= 1
	r.ac[e.Key] = flipped
	b := openWith(t, tieredOptions{Remote: r})
	for _, k := range []cache.ActionID{e.Key, other} {
		if _, err := b.GetEntry(k); !errors.Is(err, cache.ErrNotFound) {
			t.Errorf("GetEntry(%s) = %v, want a miss", k.Short(), err)
		}
		if _, err := os.Lstat(entryFile(b, k)); err == nil {
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
	a := openWith(t, tieredOptions{Remote: r, RemoteReadOnly: true})
	e := putSample(t, a)
	if err := a.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	if len(r.log) != 0 {
		t.Fatalf("read-only cache uploaded %v", r.log)
	}
	r.down = true
	var warned []string
	b := openWith(t, tieredOptions{Remote: r, Options: cache.Options{Warn: func(m string) { warned = append(warned, m) }}})
	e2 := putSample(t, b)
	if err := b.PutEntry(e2); err != nil {
		t.Fatalf("put with the remote down: %v", err)
	}
	if _, err := b.GetEntry(e2.Key); err != nil {
		t.Fatalf("local get with the remote down: %v", err)
	}
	other := cache.ComputeKey([]cache.Component{{Kind: "command", Value: "x"}})
	if _, err := b.GetEntry(other); !errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("miss with the remote down = %v", err)
	}
	if len(warned) != 1 || b.RemoteStats().UploadErrors != 1 {
		t.Errorf("warnings %q, stats %+v: want one upload warning", warned, b.RemoteStats())
	}
}

// TestRemoteSigning: with require_signed, an unsigned entry from the
// remote is a miss.
func TestRemoteSigning(t *testing.T) {
	key := []byte("team key")
	// From the remote: an unsigned entry is rejected by a strict reader.
	r := newMemRemote()
	up := openWith(t, tieredOptions{Remote: r})
	e2 := putSample(t, up)
	if err := up.PutEntry(e2); err != nil {
		t.Fatal(err)
	}
	down := openWith(t, tieredOptions{Remote: r, Options: cache.Options{SigningKey: key, RequireSigned: true}})
	if _, err := down.GetEntry(e2.Key); !errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("unsigned remote entry under require_signed: %v", err)
	}
}

// endlessRemote serves every blob as a stream that never ends, counting
// what was read from it.
type endlessRemote struct {
	*memRemote
	read atomic.Int64
}

func (m *endlessRemote) OpenBlob(_ context.Context, d cache.Digest) (io.ReadCloser, error) {
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
	a := openWith(t, tieredOptions{Remote: r})
	e := putSample(t, a)
	e.Stdout, e.Stderr = cache.Digest{}, cache.Digest{} // only sized output blobs
	if err := a.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	var largest int64
	for _, o := range e.Outputs {
		largest = max(largest, o.Size)
	}
	er := &endlessRemote{memRemote: r}
	b := openWith(t, tieredOptions{Remote: er, Options: cache.Options{Warn: func(string) {}}})
	if _, err := b.GetEntry(e.Key); !errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("GetEntry = %v, want a miss", err)
	}
	// put reads in chunks, so allow one buffer beyond size+1.
	if got := er.read.Load(); got > largest+1+1<<20 {
		t.Errorf("read %d bytes of an endless blob whose entry records at most %d", got, largest)
	}
	if names := tempNames(t, b); len(names) != 0 {
		t.Errorf("temp files left: %v", names)
	}
}

// An entry whose inputs are in chunks travels with its chunks: uploaded
// as its blobs, downloaded and checked (key included) by the other cache.
func TestRemoteChunkedEntry(t *testing.T) {
	r := newMemRemote()
	a := openWith(t, tieredOptions{Remote: r})
	e := putSample(t, a)
	for i := range 3000 {
		name := fmt.Sprintf("in/f%05d", i)
		e.Components = append(e.Components, cache.Component{Kind: cache.ChunkKind, Name: name, Value: "-:" + cache.HashBytes([]byte(name)).String()})
	}
	e.Key = cache.ComputeKey(e.Components)
	if err := a.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	if len(e.Chunks) < 2 {
		t.Fatalf("stored with %d chunks", len(e.Chunks))
	}
	for _, ch := range e.Chunks {
		if _, ok := r.cas[ch.Digest]; !ok {
			t.Errorf("chunk %s not uploaded", ch.Digest.Short())
		}
	}
	b := openWith(t, tieredOptions{Remote: r})
	got, err := b.GetEntry(e.Key)
	if err != nil {
		t.Fatalf("second cache: %v", err)
	}
	if got.Lean || len(got.Components) != len(e.Components) || got.Key != e.Key {
		t.Errorf("downloaded entry: lean %v, %d components; want whole, %d", got.Lean, len(got.Components), len(e.Components))
	}
	for _, ch := range e.Chunks {
		if !b.HasBlob(ch.Digest) {
			t.Errorf("chunk %s not downloaded", ch.Digest.Short())
		}
	}
}
