package cache

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairn-run/cairn/hint"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// memoEntries returns a few valid entries of different shapes.
func memoEntries() []*Entry {
	full := sampleEntry()
	bare := &Entry{Format: EntryFormat, Phase: "p", Components: []Component{{Kind: "command", Value: "true"}}}
	bare.Key = ComputeKey(bare.Components)
	local := sampleEntry()
	local.Phase = "local"
	local.Components = append(local.Components, Component{Kind: "env", Name: "X", Value: "é\x00"})
	local.Key = ComputeKey(local.Components)
	local.Created = time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", 3600))
	local.Cost, local.Metrics, local.Stdout = 0, nil, Digest{}
	inline := sampleInlineEntry()
	inline.Phase = "inline"
	temp := sampleInlineEntry()
	temp.Phase = "temporary"
	temp.Format = EntryFormatTemp
	temp.Outputs[1].Temporary = true
	temp.Inline = nil
	return []*Entry{full, bare, local, inline, temp}
}

// leanOf is e as the memo keeps it: of the components only the declared
// outputs, marked Lean.
func leanOf(e *Entry) *Entry {
	c := *e
	c.Components = nil
	for _, comp := range e.Components {
		if comp.Kind == KindOutput {
			c.Components = append(c.Components, comp)
		}
	}
	c.Lean = true
	return &c
}

// decodeAll decodes memo b and every entry in it, as lookups would.
func decodeAll(b []byte) (map[ActionID]memoEntry, map[Digest]memoBlob, error) {
	got, blobs, err := decodeEntryMemo(b)
	if err != nil {
		return nil, nil, err
	}
	for k, me := range got {
		e, err := decodeMemoRecord(k, me.raw)
		if err != nil {
			return nil, nil, fmt.Errorf("record %x: %w", k[:4], err)
		}
		me.e, me.raw = e, ""
		got[k] = me
	}
	return got, blobs, nil
}

func TestEntryMemoRoundTrip(t *testing.T) {
	t.Parallel()
	in := map[ActionID]memoEntry{}
	want := map[ActionID]memoEntry{} // the entries lean, as the memo keeps them
	for i, e := range memoEntries() {
		in[e.Key] = memoEntry{stamp: entryStamp{size: int64(100 + i), mtime: -5, ctime: 1 << 62, ino: 1<<64 - 1}, recorded: int64(i), e: e}
		want[e.Key] = memoEntry{stamp: in[e.Key].stamp, recorded: int64(i), e: leanOf(e)}
	}
	blobs := map[Digest]memoBlob{HashBytes([]byte("b")): {stamp: entryStamp{size: 1, mtime: 2, ctime: 3, ino: 4}, recorded: 5}}
	b := encodeEntryMemo(in, blobs)
	got, gotBlobs, err := decodeAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(memoEntry{}, entryStamp{})); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(blobs, gotBlobs, cmp.AllowUnexported(memoBlob{}, entryStamp{})); diff != "" {
		t.Errorf("blobs round trip (-want +got):\n%s", diff)
	}
	// Records never looked up are written back as they were read, and
	// the owned decoder reads what the copying one reads.
	index, indexBlobs, err := decodeEntryMemoOwned(append([]byte(nil), b...))
	if err != nil {
		t.Fatal(err)
	}
	if again := encodeEntryMemo(index, indexBlobs); !bytes.Equal(again, b) {
		t.Errorf("re-encoding undecoded records changed the memo")
	}
}

func TestEntryMemoRejectsDamage(t *testing.T) {
	t.Parallel()
	in := map[ActionID]memoEntry{}
	for _, e := range memoEntries() {
		in[e.Key] = memoEntry{e: e}
	}
	b := encodeEntryMemo(in, nil)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"cut short", b[:len(b)-1]},
		{"header only", []byte(entryMemoFormat.Header())},
		{"flipped byte", func() []byte { c := append([]byte(nil), b...); c[len(entryMemoFormat.Header())+40] ^= 1; return c }()},
		{"other header", append([]byte("cairn-entry-memo 9\n"), b[len(entryMemoFormat.Header()):]...)},
	} {
		if _, _, err := decodeEntryMemo(tc.b); err == nil {
			t.Errorf("%s: decoded without error", tc.name)
		}
	}
}

// TestEntryMemoDamagedRecord: a record that does not decode, in a memo
// whose checksum is right, costs a full read of that entry only.
func TestEntryMemoDamagedRecord(t *testing.T) {
	t.Parallel()
	root, path := t.TempDir(), filepath.Join(t.TempDir(), "entries")
	c, m := memoDir(t, root, path, Options{})
	e := putSample(t, c)
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	m.now = func() time.Time { return time.Now().Add(time.Second) }
	if _, err := c.GetEntryLean(e.Key); err != nil {
		t.Fatal(err)
	}
	me := m.entries[e.Key]
	// The output path escapes the workspace: decodes, but is refused.
	bad := *me.e
	bad.Outputs = []OutputFile{{Path: "../x", Type: "file"}}
	rec := hint.NewWriter("", 0)
	encodeMemoRecord(rec, &bad)
	me.e, me.raw = nil, string(rec.B)
	if err := os.WriteFile(path, encodeEntryMemo(map[ActionID]memoEntry{e.Key: me}, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	c2, m2 := memoDir(t, root, path, Options{})
	got, err := c2.GetEntryLean(e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if m2.Hits() != 0 {
		t.Errorf("a damaged record answered a lookup")
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("entry read past a damaged record (-want +got):\n%s", diff)
	}
}

// memoDir opens a cache with an entry memo loaded from path, as a new
// process of a workspace would.
func memoDir(t testing.TB, root, path string, o Options) (*Dir, *EntryMemo) {
	t.Helper()
	c, err := OpenWith(root, o)
	if err != nil {
		t.Fatal(err)
	}
	m := LoadEntryMemo(path)
	c.UseEntryMemo(m)
	return c, m
}

func TestEntryMemoAnswersUnchangedEntries(t *testing.T) {
	t.Parallel()
	root, path := t.TempDir(), filepath.Join(t.TempDir(), "entries")
	c, m := memoDir(t, root, path, Options{})
	e := putSample(t, c)
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	// The first read is a full one, recorded a second later than now so
	// the entry file is not racy.
	m.now = func() time.Time { return time.Now().Add(time.Second) }
	if _, err := c.GetEntryLean(e.Key); err != nil {
		t.Fatal(err)
	}
	if m.Hits() != 0 {
		t.Fatalf("first read answered from an empty memo")
	}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}

	c2, m2 := memoDir(t, root, path, Options{})
	got, err := c2.GetEntryLean(e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if m2.Hits() != 1 {
		t.Fatalf("unchanged entry not answered from the memo (hits %d)", m2.Hits())
	}
	if diff := cmp.Diff(leanOf(e), got); diff != "" {
		t.Errorf("memo entry (-want +got):\n%s", diff)
	}
	// GetEntry never answers from the memo: it gives every component.
	whole, err := c2.GetEntry(e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e, whole); diff != "" {
		t.Errorf("GetEntry with a memo (-want +got):\n%s", diff)
	}
	if m2.Hits() != 1 {
		t.Errorf("GetEntry answered from the memo (hits %d)", m2.Hits())
	}
	// A lean entry cannot be stored: its components do not give its key.
	if err := c2.PutEntry(got); err == nil {
		t.Errorf("PutEntry stored a lean entry")
	}
	// The caller's copy is its own.
	got.Outputs[0].Path = "changed"
	again, _ := c2.GetEntryLean(e.Key)
	if again.Outputs[0].Path != e.Outputs[0].Path {
		t.Errorf("changing a returned entry changed the memo")
	}

	// An entry file replaced behind the memo's back (new inode, new
	// ctime) is read again: here it is now damaged, and must be caught.
	p := c2.entryPath(e.Key)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-3] ^= 1
	tmp := p + ".new"
	if err := os.WriteFile(tmp, b, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	c3, m3 := memoDir(t, root, path, Options{})
	if _, err := c3.GetEntryLean(e.Key); err == nil {
		t.Errorf("damaged entry behind a stale memo was returned")
	}
	if m3.Hits() != 0 {
		t.Errorf("memo answered for a replaced entry file")
	}
}

func TestEntryMemoRacyAndSigned(t *testing.T) {
	t.Parallel()
	root, path := t.TempDir(), filepath.Join(t.TempDir(), "entries")
	c, m := memoDir(t, root, path, Options{})
	e := putSample(t, c)
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(c.entryPath(e.Key))
	if err != nil {
		t.Fatal(err)
	}
	// Read within the racy window of the file's ctime: not trusted later.
	m.now = func() time.Time { return fi.ModTime() }
	if _, err := c.GetEntryLean(e.Key); err != nil {
		t.Fatal(err)
	}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	c2, m2 := memoDir(t, root, path, Options{})
	if _, err := c2.GetEntryLean(e.Key); err != nil {
		t.Fatal(err)
	}
	if m2.Hits() != 0 {
		t.Errorf("racy memo entry trusted")
	}

	// With signatures required the memo is never consulted.
	m2.now = func() time.Time { return time.Now().Add(time.Second) }
	c2.GetEntryLean(e.Key) // recorded, not racy
	if err := m2.Save(); err != nil {
		t.Fatal(err)
	}
	c3, m3 := memoDir(t, root, path, Options{SigningKey: []byte("k"), RequireSigned: true})
	if _, err := c3.GetEntryLean(e.Key); err == nil {
		t.Errorf("unsigned entry returned with signatures required")
	}
	if m3.Hits() != 0 {
		t.Errorf("memo consulted with signatures required")
	}
}

// FuzzDecodeEntryMemo feeds the memo decoder damaged files. With fixSum
// the input gets a valid checksum appended, so the fuzzer reaches the
// record decoder rather than stopping at the checksum.
func FuzzDecodeEntryMemo(f *testing.F) {
	in := map[ActionID]memoEntry{}
	for _, e := range memoEntries() {
		in[e.Key] = memoEntry{e: e}
	}
	good := encodeEntryMemo(in, map[Digest]memoBlob{HashBytes(nil): {recorded: 1}})
	f.Add(good, false)
	f.Add(good[:len(good)-hint.TrailerSize], true)
	f.Add(encodeEntryMemo(nil, nil), false)
	f.Add([]byte(entryMemoFormat.Header()), true)
	f.Fuzz(func(t *testing.T, b []byte, fixSum bool) {
		if fixSum {
			b = hint.AppendTrailer(b[:len(b):len(b)])
		}
		index, blobs, err := decodeEntryMemo(b)
		if err != nil {
			return
		}
		// Undecoded records are written back as read.
		if again, againBlobs, err := decodeEntryMemo(encodeEntryMemo(index, blobs)); err != nil {
			t.Fatalf("re-encoded index does not decode: %v", err)
		} else if diff := cmp.Diff(index, again, cmp.AllowUnexported(memoEntry{}, entryStamp{}), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("re-encoding the index changed it (-first +second):\n%s", diff)
		} else if diff := cmp.Diff(blobs, againBlobs, cmp.AllowUnexported(memoBlob{}, entryStamp{}), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("re-encoding the index changed the blobs (-first +second):\n%s", diff)
		}
		// Each record decodes to its entry or to an error, and decoded
		// entries survive a round trip.
		got := map[ActionID]memoEntry{}
		for k, me := range index {
			e, err := decodeMemoRecord(k, me.raw)
			if err != nil {
				continue
			}
			if e.Key != k {
				t.Fatalf("record %x decoded under key %x", k[:4], e.Key[:4])
			}
			me.e, me.raw = e, ""
			got[k] = me
		}
		again, againBlobs, err := decodeAll(encodeEntryMemo(got, blobs))
		if err != nil {
			t.Fatalf("re-encoded memo does not decode: %v", err)
		}
		if diff := cmp.Diff(blobs, againBlobs, cmp.AllowUnexported(memoBlob{}, entryStamp{}), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("re-encode changed the blobs (-first +second):\n%s", diff)
		}
		if diff := cmp.Diff(got, again, cmp.AllowUnexported(memoEntry{}, entryStamp{}), cmpopts.EquateNaNs()); diff != "" {
			t.Errorf("re-encode changed the memo (-first +second):\n%s", diff)
		}
	})
}

// TestBlobMemoCopiesVerifiedBlobsUnhashed: a raw blob restored (and so
// verified) once is copied unhashed the next time while its file is
// unchanged; a blob rewritten in place since is hashed again and caught;
// a shared cache never trusts the memo.
func TestBlobMemoCopiesVerifiedBlobsUnhashed(t *testing.T) {
	t.Parallel()
	root, path := t.TempDir(), filepath.Join(t.TempDir(), "entries")
	content := randomBytes(t, 3<<20) // big enough for the kernel copy path
	c, m := memoDir(t, root, path, Options{})
	d, err := c.PutBytes(content)
	if err != nil {
		t.Fatal(err)
	}
	small, err := c.PutBytes([]byte("small blob"))
	if err != nil {
		t.Fatal(err)
	}
	m.now = func() time.Time { return time.Now().Add(time.Second) } // not racy
	out := t.TempDir()
	restore := func(c *Dir, d Digest, name string) []byte {
		t.Helper()
		if err := c.RestoreFile(d, filepath.Join(out, name), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	restore(c, d, "big")
	restore(c, small, "small")
	if m.BlobHits() != 0 {
		t.Fatalf("first restores trusted an empty memo")
	}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}

	c2, m2 := memoDir(t, root, path, Options{})
	if got := restore(c2, d, "big2"); !bytes.Equal(got, content) {
		t.Fatalf("trusted restore wrote %d other bytes", len(got))
	}
	if got := restore(c2, small, "small2"); string(got) != "small blob" {
		t.Fatalf("trusted restore of a small blob: %q", got)
	}
	if m2.BlobHits() != 2 {
		t.Fatalf("verified blobs hashed again (blob hits %d, want 2)", m2.BlobHits())
	}

	// Rewritten in place (same inode, same size): ctime moves, so the
	// memo no longer vouches, and the hash catches the damage.
	p := c2.blobPath(d, false)
	os.Chmod(p, 0o644)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{content[0] ^ 1}, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c3, m3 := memoDir(t, root, path, Options{})
	if err := c3.RestoreFile(d, filepath.Join(out, "big3"), 0o644); err == nil {
		t.Errorf("blob damaged in place restored on the memo's word")
	}
	if m3.BlobHits() != 0 {
		t.Errorf("memo vouched for a rewritten blob")
	}

	// A shared cache hashes every read.
	c4, m4 := memoDir(t, root, path, Options{})
	c4.perms.shared = true
	restore(c4, small, "small4")
	if m4.BlobHits() != 0 {
		t.Errorf("shared cache copied a blob unhashed")
	}
}

// BenchmarkGetEntry1000 reads 1,000 entries as a no-op run does: in full
// (checksum, JSON, key), and answered by a loaded memo (one lstat each).
func BenchmarkGetEntry1000(b *testing.B) {
	root, path := b.TempDir(), filepath.Join(b.TempDir(), "entries")
	c, m := memoDir(b, root, path, Options{})
	if _, err := c.PutBytes(nil); err != nil {
		b.Fatal(err)
	}
	keys := make([]ActionID, 1000)
	for i := range keys {
		comps := []Component{{Kind: "command", Value: fmt.Sprintf("step %d", i)}}
		for j := 0; j < 10; j++ {
			comps = append(comps, Component{Kind: "input", Name: fmt.Sprintf("in/f%05d", i*10+j), Value: "-:" + HashBytes([]byte{byte(j)}).String()})
		}
		e := &Entry{Format: EntryFormat, Key: ComputeKey(comps), Phase: fmt.Sprintf("p%05d", i), Components: comps,
			Outputs: []OutputFile{{Path: fmt.Sprintf("out/p%05d", i), Type: TypeFile, Mode: 0o644, Digest: HashBytes(nil)}}}
		if err := c.PutEntry(e); err != nil {
			b.Fatal(err)
		}
		keys[i] = e.Key
	}
	m.now = func() time.Time { return time.Now().Add(time.Second) }
	for _, k := range keys {
		if _, err := c.GetEntryLean(k); err != nil {
			b.Fatal(err)
		}
	}
	if err := m.Save(); err != nil {
		b.Fatal(err)
	}
	b.Run("full", func(b *testing.B) {
		full, err := Open(root)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			for _, k := range keys {
				if _, err := full.GetEntry(k); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("memo", func(b *testing.B) {
		for b.Loop() {
			memo := LoadEntryMemo(path)
			c.UseEntryMemo(memo)
			for _, k := range keys {
				if _, err := c.GetEntryLean(k); err != nil {
					b.Fatal(err)
				}
			}
			if memo.Hits() != int64(len(keys)) {
				b.Fatalf("memo answered %d of %d", memo.Hits(), len(keys))
			}
		}
	})
}
