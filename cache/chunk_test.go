package cache

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cairn-run/cairn/cache/chunking"
	"github.com/cairn-run/cairn/internal/fsx"
	"github.com/cairn-run/cairn/internal/fsx/fsxtest"
)

// manyInputs returns n input components, files of a directory tree, with
// the value of the file named edited (if any) changed.
func manyInputs(n int, edited string) []Component {
	comps := make([]Component, n)
	for i := range comps {
		name := inputName(i)
		comps[i] = Component{Kind: ChunkKind, Name: name, Value: "-:" + HashBytes([]byte(name)).String()}
		if name == edited {
			comps[i].Value = "-:" + HashBytes([]byte("edited")).String()
		}
	}
	return comps
}

func inputName(i int) string { return fmt.Sprintf("in/d%02d/f%05d", i%37, i) }

// chunkedSample is sampleEntry with n input files.
func chunkedSample(t *testing.T, c *Dir, inputs []Component) *Entry {
	e := putSample(t, c)
	e.Components = append(e.Components, inputs...)
	e.Key = ComputeKey(e.Components)
	return e
}

var sortComps = cmpopts.SortSlices(func(a, b Component) bool { return compareComponents(a, b) < 0 })

func TestChunkedEntryRoundTrip(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	e := chunkedSample(t, c, manyInputs(5000, ""))
	want := *e
	want.Components = append([]Component(nil), e.Components...)
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	if e.Format != EntryFormatChunked || len(e.Chunks) < 2 {
		t.Fatalf("stored as format %d with %d chunks, want format %d and several", e.Format, len(e.Chunks), EntryFormatChunked)
	}
	if e.Key != want.Key {
		t.Fatalf("storing changed the key")
	}
	_, b, err := c.ReadEntryBytes(e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("cairn-ac 6\n")) || bytes.Contains(b, []byte("in/d01/")) {
		t.Errorf("entry file does not start with cairn-ac 6 or holds input paths inline (%d bytes)", len(b))
	}
	reads := c.ChunkReads()
	got, err := c.GetEntry(e.Key)
	if err != nil {
		t.Fatal(err)
	}
	want.Format, want.Chunks = EntryFormatChunked, e.Chunks
	if diff := cmp.Diff(&want, got, sortComps); diff != "" {
		t.Errorf("GetEntry (-want +got):\n%s", diff)
	}
	if n := c.ChunkReads() - reads; n != int64(len(e.Chunks)) {
		t.Errorf("GetEntry read %d chunks, want %d", n, len(e.Chunks))
	}

	head, err := c.GetEntryHead(e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if !head.Lean || len(head.Components) != 2 || len(head.Chunks) != len(e.Chunks) {
		t.Errorf("GetEntryHead: lean %v, %d components, %d chunks; want lean, the 2 others, %d chunks", head.Lean, len(head.Components), len(head.Chunks), len(e.Chunks))
	}
	if err := c.FillChunks(head, true); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&want, head, sortComps); diff != "" {
		t.Errorf("FillChunks of the head (-want +got):\n%s", diff)
	}
	var refs []Digest
	for _, r := range got.Blobs() {
		refs = append(refs, r.Digest)
	}
	for _, ch := range e.Chunks {
		if !bytes.Contains(fmt.Append(nil, refs), fmt.Append(nil, ch.Digest)) {
			t.Errorf("Blobs() lacks chunk %s", ch.Digest.Short())
		}
	}
}

// An entry of many inputs in an older format (all components in its body)
// is still read, and a few inputs are not cut.
func TestOldFormatManyInputsRead(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	e := chunkedSample(t, c, manyInputs(3000, ""))
	b, err := EncodeEntry(e) // no chunks: format 1, as cairn wrote it before format 6
	if err != nil {
		t.Fatal(err)
	}
	p := c.entryPath(e.Key)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, b, 0o444); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetEntry(e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("GetEntry (-want +got):\n%s", diff)
	}

	few := chunkedSample(t, c, manyInputs(chunkThreshold-1, "")) // and the sample's own
	if err := c.PutEntry(few); err != nil {
		t.Fatal(err)
	}
	if few.Format != EntryFormat || few.Chunks != nil {
		t.Errorf("%d inputs stored as format %d with %d chunks, want format 1 without", chunkThreshold, few.Format, len(few.Chunks))
	}
}

// A chunk gone or damaged makes the entry corrupt (moved aside), never a
// hit, as a missing output blob does.
func TestChunkMissingOrDamaged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		spoil func(p string)
		read  func(c *Dir, k ActionID) (*Entry, error)
	}{
		{"missing", func(p string) { os.Remove(p) }, (*Dir).GetEntry},
		{"missing, head", func(p string) { os.Remove(p) }, (*Dir).GetEntryHead},
		{"missing, lean", func(p string) { os.Remove(p) }, (*Dir).GetEntryLean},
		{"damaged", func(p string) {
			b, _ := os.ReadFile(p)
			b[len(b)-1] ^= 1
			replaceFile(t, p, b)
		}, (*Dir).GetEntry},
		{"other bytes", func(p string) {
			other := EncodeComponents(manyInputs(3, ""))
			replaceFile(t, p, other)
		}, (*Dir).GetEntry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newDir(t)
			e := chunkedSample(t, c, manyInputs(3000, ""))
			if err := c.PutEntry(e); err != nil {
				t.Fatal(err)
			}
			p, ok := c.statBlob(e.Chunks[1].Digest)
			if !ok {
				t.Fatal("chunk not stored")
			}
			tc.spoil(p)
			got, err := tc.read(c, e.Key)
			if got != nil || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read = %v, %v; want no entry, ErrCorrupt", got != nil, err)
			}
			if _, err := os.Stat(c.entryPath(e.Key)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("entry not moved aside: %v", err)
			}
			if _, err := c.GetEntry(e.Key); !errors.Is(err, ErrNotFound) {
				t.Errorf("next read = %v, want a miss", err)
			}
		})
	}
}

// casFiles returns the blob files of c.
func casFiles(t *testing.T, c *Dir) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	filepath.WalkDir(filepath.Join(c.Root(), "cas"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files[p] = true
		}
		return nil
	})
	return files
}

// An edited, added or removed file writes the one or two chunks it
// changes, and the entry; every other chunk is already there.
func TestChunkEditWritesOneChunk(t *testing.T) {
	t.Parallel()
	base := manyInputs(20000, "")
	for _, tc := range []struct {
		name   string
		inputs []Component
		most   int
	}{
		{"edit", manyInputs(20000, inputName(7000)), 1},
		{"add", append(manyInputs(20000, ""), Component{Kind: ChunkKind, Name: inputName(7000) + "x", Value: "-:00"}), 2},
		{"remove", append(manyInputs(7000, ""), manyInputs(20000, "")[7001:]...), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newDir(t)
			e := chunkedSample(t, c, base)
			if err := c.PutEntry(e); err != nil {
				t.Fatal(err)
			}
			before := casFiles(t, c)
			e2 := chunkedSample(t, c, tc.inputs)
			if err := c.PutEntry(e2); err != nil {
				t.Fatal(err)
			}
			var added []string
			for p := range casFiles(t, c) {
				if !before[p] {
					added = append(added, p)
				}
			}
			if len(added) < 1 || len(added) > tc.most {
				t.Errorf("%d new blobs, want 1 to %d: %q", len(added), tc.most, added)
			}
		})
	}
}

func FuzzDecodeChunk(f *testing.F) {
	f.Add(EncodeComponents(manyInputs(3, "")), 3)
	f.Add(EncodeComponents([]Component{{Kind: "command", Value: "x"}}), 1)
	f.Add([]byte(keyMagic+"\x01"), 0)
	f.Fuzz(func(t *testing.T, b []byte, count int) {
		ch := Chunk{Digest: HashBytes(b), Count: count, Size: int64(len(b))}
		comps, err := DecodeChunk(ch, b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if len(comps) != count || count == 0 {
			t.Fatalf("%d components, count %d", len(comps), count)
		}
		for _, c := range comps {
			if c.Kind != ChunkKind {
				t.Fatalf("component of kind %q accepted", c.Kind)
			}
		}
		if !bytes.Equal(EncodeComponents(comps), b) {
			t.Fatalf("accepted bytes that are not the canonical encoding of what they decode to")
		}
	})
}

// neverStarting returns n input components whose names start no chunk.
func neverStarting(n int) []Component {
	var comps []Component
	for i := 0; len(comps) < n; i++ {
		if name := inputName(i); !chunking.Starts(name) {
			comps = append(comps, Component{Kind: ChunkKind, Name: name, Value: "-:00"})
		}
	}
	return comps
}

// NewKeyed gives ComputeKey's key, and chunks that are the canonical
// encodings of its inputs in order, however the components come.
func TestNewKeyed(t *testing.T) {
	t.Parallel()
	around := []Component{{Kind: "workdir", Value: "."}, {Kind: "command", Value: `["x"]`}, {Kind: "output", Name: "0", Value: "o"}, {Kind: "env", Name: "A", Value: "1"}}
	reversed := manyInputs(3000, "")
	slices.Reverse(reversed)
	for _, tc := range []struct {
		name   string
		comps  []Component
		chunks bool
	}{
		{"none", nil, false},
		{"few inputs", append(slices.Clone(around), manyInputs(10, "")...), false},
		{"threshold", manyInputs(chunkThreshold, ""), false},
		{"many inputs alone", manyInputs(chunkThreshold+1, ""), true},
		{"many, unsorted, kinds around", append(reversed, around...), true},
		{"names that never start a chunk", append(slices.Clone(around), neverStarting(2*chunking.Max+5)...), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := NewKeyed(tc.comps)
			if k.Key() != ComputeKey(tc.comps) {
				t.Errorf("key %s, ComputeKey %s", k.Key().Short(), ComputeKey(tc.comps).Short())
			}
			if diff := cmp.Diff(sortedComponents(tc.comps), k.Components(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("components (-want +got):\n%s", diff)
			}
			if got := k.Chunks() != nil; got != tc.chunks {
				t.Fatalf("chunked %v, want %v", got, tc.chunks)
			}
			var inputs []Component
			for i, ch := range k.Chunks() {
				cc := k.ChunkComponents(i)
				data := EncodeComponents(cc)
				if want := (Chunk{HashBytes(data), len(cc), int64(len(data))}); ch != want || len(cc) > chunking.Max {
					t.Errorf("chunk %d: %+v, its %d components encode to %+v", i, ch, len(cc), want)
				}
				inputs = append(inputs, cc...)
			}
			if tc.chunks {
				want := slices.DeleteFunc(sortedComponents(tc.comps), func(c Component) bool { return c.Kind != ChunkKind })
				if diff := cmp.Diff(want, inputs); diff != "" {
					t.Errorf("chunks' components (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// An entry's Keyed is used only if it is of the entry's own components
// and key: one made of others is ignored, not stored under the entry's key.
func TestStoreIgnoresOthersKeyed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		keyed func(e *Entry) *Keyed
	}{
		{"other components", func(*Entry) *Keyed { return NewKeyed(manyInputs(5000, inputName(9))) }},
		{"a copy of them", func(e *Entry) *Keyed { return NewKeyed(slices.Clone(e.Components)) }},
		{"their own", func(e *Entry) *Keyed { return NewKeyed(e.Components) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newDir(t)
			e := chunkedSample(t, c, manyInputs(5000, ""))
			slices.SortFunc(e.Components, compareComponents)
			want := slices.Clone(e.Components)
			e.Keyed = tc.keyed(e)
			if err := c.PutEntry(e); err != nil {
				t.Fatal(err)
			}
			got, err := c.GetEntry(e.Key)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got.Components, sortComps); diff != "" {
				t.Errorf("stored components (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChunksCommittedTogether: the many input chunks of a large entry are
// made durable as a batch (two syncfs calls per batch), not with two
// fsyncs each.
func TestChunksCommittedTogether(t *testing.T) {
	root := t.TempDir()
	if _, err := (fsx.OS{}).OpenFS(root); err != nil {
		t.Skipf("no syncfs here: %v", err)
	}
	c, err := Open(filepath.Join(root, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	e := chunkedSample(t, c, manyInputs(60000, ""))
	rec := &fsxtest.Recorder{Base: fsx.OS{}, Root: root}
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	restore := fsx.Set(rec)
	err = c.PutEntry(e)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Chunks) < batchMin {
		t.Fatalf("the entry has %d chunks, want at least %d for a batch", len(e.Chunks), batchMin)
	}
	counts := map[string]int{}
	for _, ev := range rec.Log() {
		counts[ev.Kind]++
	}
	batches := (len(e.Chunks) + chunkBatch - 1) / chunkBatch
	if counts["syncfs"] != 2*batches || counts["sync"] >= len(e.Chunks) {
		t.Errorf("%d chunks stored with %d fsyncs and %d syncfs calls, want 2 syncfs a batch of %d (%d) and a few fsyncs (the entry's)",
			len(e.Chunks), counts["sync"], counts["syncfs"], chunkBatch, 2*batches)
	}
	got, err := c.GetEntry(e.Key)
	if err != nil {
		t.Fatalf("the entry does not read back: %v", err)
	}
	if len(got.Components) != len(e.Components) {
		t.Errorf("read back with %d components, want %d", len(got.Components), len(e.Components))
	}
}
