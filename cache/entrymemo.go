package cache

import (
	"bytes"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/hint"
)

// entryMemoFormat is the entry memo file's.
var entryMemoFormat = hint.NewFormat("entry-memo", 8, "ws")

// EntryMemo remembers action entries already read and verified, by the
// stat of their file (size, mtime, ctime, inode), so a run that finds the
// same entries as the last one (a no-op) does not read, checksum, decode
// and re-verify each of them again (it keeps them lean: of the
// components only the declared outputs, see Entry.Lean); and raw blobs already restored and
// verified, so restoring one again copies it without hashing it (never for
// a shared cache). FORMAT.md, "Workspace memo", is the contract. It is a workspace's private file, never
// part of the cache: losing or damaging it costs one full read of each
// entry, nothing else.
//
// An entry file is written once and published by link(2); anything that
// replaces or rewrites it changes its inode or its ctime, and ctime cannot
// be set back by a user. A remembered entry is trusted only when its
// file's ctime lies clearly before the moment it was read (the racy rule,
// package hint), and never when signatures are required (the memo does not know
// which key checked them).
type EntryMemo struct {
	path string
	now  func() time.Time

	mu      sync.Mutex
	entries map[ActionID]memoEntry
	used    map[ActionID]bool
	blobs   map[Digest]memoBlob // raw blobs this workspace verified
	dirty   bool

	hits, blobHits atomic.Int64
}

// memoBlob is a raw blob whose content was hashed and found right.
type memoBlob struct {
	stamp    entryStamp
	recorded int64 // ns: when its hashing began
}

// A memoEntry's entry is decoded from its record (raw) the first time it
// is looked up: a memo holds up to three times the entries a run uses, and
// decoding them all up front was a fifth of a no-op run's start.
type memoEntry struct {
	stamp    entryStamp
	recorded int64 // ns: when the entry was read and verified
	e        *Entry
	raw      string // the encoded entry, while e is nil
}

// entryStamp is what the memo compares of an entry file.
type entryStamp struct {
	size, mtime, ctime int64
	ino                uint64
}

// LoadEntryMemo reads the memo at path; a missing or damaged file gives an
// empty memo.
func LoadEntryMemo(path string) *EntryMemo {
	m := &EntryMemo{path: path, now: time.Now, entries: map[ActionID]memoEntry{}, used: map[ActionID]bool{}, blobs: map[Digest]memoBlob{}}
	r, ok := entryMemoFormat.Read(path)
	if !ok {
		return m
	}
	if entries, blobs, err := decodeEntryIndex(r); err == nil {
		m.entries, m.blobs = entries, blobs // sharing the file's memory
	}
	return m
}

// Hits reports how many entry lookups the memo answered.
func (m *EntryMemo) Hits() int64 { return m.hits.Load() }

// BlobHits reports how many blobs were copied unhashed on the memo's word.
func (m *EntryMemo) BlobHits() int64 { return m.blobHits.Load() }

// blobTrusted reports whether raw blob d, whose open file's stat is fi,
// was verified by this workspace and has not changed since (the racy rule
// as for entries).
func (m *EntryMemo) blobTrusted(d Digest, fi fs.FileInfo) bool {
	st, ok := stampOf(fi)
	if !ok {
		return false
	}
	m.mu.Lock()
	mb, ok := m.blobs[d]
	m.mu.Unlock()
	if !ok || mb.stamp != st || hint.Recent(st.ctime, mb.recorded) {
		return false
	}
	m.blobHits.Add(1)
	return true
}

// blobVerified remembers that raw blob d, whose open file's stat was fi,
// hashed right; hashing began at began.
func (m *EntryMemo) blobVerified(d Digest, fi fs.FileInfo, began time.Time) {
	st, ok := stampOf(fi)
	if !ok {
		return
	}
	m.mu.Lock()
	m.blobs[d] = memoBlob{stamp: st, recorded: began.UnixNano()}
	m.dirty = true
	m.mu.Unlock()
}

// lookup returns the remembered entry for key if its entry file still has
// the stamp it had when read (stamp stats it), and the memory is not racy.
// A key the memo does not hold costs no system call.
func (m *EntryMemo) lookup(key ActionID, stamp func() (entryStamp, bool)) *Entry {
	m.mu.Lock()
	me, ok := m.entries[key]
	if ok {
		m.used[key] = true
	}
	m.mu.Unlock()
	if !ok {
		return nil
	}
	st, ok := stamp()
	if !ok || me.stamp != st || hint.Recent(st.ctime, me.recorded) {
		return nil
	}
	if me.e == nil {
		e, err := decodeMemoRecord(key, me.raw)
		if err != nil {
			return nil // read in full, and recorded again
		}
		m.mu.Lock()
		if cur, ok := m.entries[key]; ok && cur.e == nil && cur.raw == me.raw {
			cur.e, cur.raw = e, ""
			m.entries[key] = cur
		}
		m.mu.Unlock()
		me.e = e
	}
	m.hits.Add(1)
	return cloneEntry(me.e)
}

// cloneEntry copies e so that a caller changing its copy's fields or
// outputs cannot change the memo's. Components and Metrics are shared:
// nothing changes a read entry's (a no-op would otherwise copy ~15 records
// per phase for nothing).
func cloneEntry(e *Entry) *Entry {
	c := *e
	c.Outputs = slices.Clone(e.Outputs)
	return &c
}

// record remembers e, read and verified at readAt from a file whose stat
// (taken on the open file) was fi.
func (m *EntryMemo) record(key ActionID, fi fs.FileInfo, e *Entry, readAt time.Time) {
	st, ok := stampOf(fi)
	if !ok {
		return
	}
	c := cloneEntry(e)
	m.mu.Lock()
	m.entries[key] = memoEntry{stamp: st, recorded: readAt.UnixNano(), e: c}
	m.used[key] = true
	m.dirty = true
	m.mu.Unlock()
}

// Save writes the memo back if it changed. Entries not looked up in this
// process are kept while they number at most twice the used ones plus
// 256 (another selection of targets); beyond that only the ones used are
// kept, so the file, read by every run, tracks the workspace rather than
// growing with every key an edit made obsolete.
func (m *EntryMemo) Save() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirty {
		return nil
	}
	if len(m.entries) > 2*len(m.used)+256 {
		for k := range m.entries {
			if !m.used[k] {
				delete(m.entries, k)
			}
		}
	}
	if len(m.blobs) > 4*len(m.used)+4096 {
		clear(m.blobs) // verified again on their next restore
	}
	b := encodeEntryMemo(m.entries, m.blobs)
	if err := entryMemoFormat.Save(m.path, b, 0o644); err != nil {
		return fmt.Errorf("save entry memo: %w", err)
	}
	m.dirty = false
	return nil
}

// The file is the header, then one record per entry (key order): the key,
// the stamp, and the encoded entry as one string, so that loading the memo
// only indexes records and an entry is decoded when first looked up; then
// the raw blobs with their stamps, then the checksum of everything before
// it (package hint).

func encodeEntryMemo(entries map[ActionID]memoEntry, blobs map[Digest]memoBlob) []byte {
	keys := make([]ActionID, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i][:], keys[j][:]) < 0 })
	w := entryMemoFormat.Writer(len(keys) * 512)
	w.Len(len(keys))
	rec := hint.NewWriter("", 2048)
	for _, k := range keys {
		me := entries[k]
		w.Fixed(k[:])
		writeStamp(w, me.stamp, me.recorded)
		if me.e == nil {
			w.Str(me.raw)
			continue
		}
		rec.B = rec.B[:0]
		encodeMemoRecord(rec, me.e)
		w.Len(len(rec.B))
		w.Fixed(rec.B)
	}
	digests := make([]Digest, 0, len(blobs))
	for d := range blobs {
		digests = append(digests, d)
	}
	sort.Slice(digests, func(i, j int) bool { return bytes.Compare(digests[i][:], digests[j][:]) < 0 })
	w.Len(len(digests))
	for _, d := range digests {
		mb := blobs[d]
		w.Fixed(d[:])
		writeStamp(w, mb.stamp, mb.recorded)
	}
	return w.Finish()
}

// encodeMemoRecord writes entry e (its key is the record's), lean: of its
// components only those of kind KindOutput.
func encodeMemoRecord(w *hint.Writer, e *Entry) {
	w.Int(int64(e.Format))
	w.Str(e.Phase)
	n := 0
	for _, c := range e.Components {
		if c.Kind == KindOutput {
			n++
		}
	}
	w.Len(n)
	for _, c := range e.Components {
		if c.Kind != KindOutput {
			continue
		}
		w.Str(c.Kind)
		w.Str(c.Name)
		w.Str(c.Value)
	}
	w.Len(len(e.Outputs))
	for _, o := range e.Outputs {
		w.Str(o.Path)
		w.Str(o.Type)
		w.Uint(uint64(o.Mode))
		w.Fixed(o.Digest[:])
		w.Int(o.Size)
		w.Str(o.Target)
		w.Bool(o.Temporary)
		w.Int(o.MTime)
	}
	w.Int(int64(e.ExitCode))
	w.Fixed(e.Stdout[:])
	w.Fixed(e.Stderr[:])
	w.Float(e.Cost)
	w.Int(e.Iterations)
	w.Str(string(e.Metrics))
	w.Int(e.DurationMS)
	created, _ := e.Created.MarshalBinary()
	w.Str(string(created))
	w.Str(e.Host)
	w.Str(e.User)
	w.Len(len(e.Inline))
	for _, b := range e.Inline {
		w.Fixed(b.Digest[:])
		w.Str(string(b.Data))
	}
}

func writeStamp(w *hint.Writer, st entryStamp, recorded int64) {
	w.Int(st.size)
	w.Int(st.mtime)
	w.Int(st.ctime)
	w.Uint(st.ino)
	w.Int(recorded)
}

func readStamp(r *hint.Reader) (st entryStamp, recorded int64) {
	st.size, st.mtime, st.ctime = r.Int(), r.Int(), r.Int()
	st.ino = r.Uint()
	return st, r.Int()
}

// decodeEntryMemo indexes the records of memo file b (a copy of it);
// their entries stay encoded until decodeMemoRecord.
func decodeEntryMemo(b []byte) (map[ActionID]memoEntry, map[Digest]memoBlob, error) {
	r, err := entryMemoFormat.Open(b)
	if err != nil {
		return nil, nil, err
	}
	return decodeEntryIndex(r)
}

// decodeEntryMemoOwned is decodeEntryMemo without the copy: the records
// share b's memory, which the caller must never change again.
func decodeEntryMemoOwned(b []byte) (map[ActionID]memoEntry, map[Digest]memoBlob, error) {
	r, err := entryMemoFormat.OpenOwned(b)
	if err != nil {
		return nil, nil, err
	}
	return decodeEntryIndex(r)
}

func decodeEntryIndex(r *hint.Reader) (map[ActionID]memoEntry, map[Digest]memoBlob, error) {
	n := r.Len()
	out := make(map[ActionID]memoEntry, n)
	for i := 0; i < n && r.OK(); i++ {
		var k ActionID
		r.Fixed(k[:])
		var me memoEntry
		me.stamp, me.recorded = readStamp(r)
		me.raw = r.Str()
		if r.OK() {
			out[k] = me
		}
	}
	nb := r.Len()
	blobs := make(map[Digest]memoBlob, nb)
	for i := 0; i < nb && r.OK(); i++ {
		var d Digest
		r.Fixed(d[:])
		var mb memoBlob
		mb.stamp, mb.recorded = readStamp(r)
		blobs[d] = mb
	}
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	return out, blobs, nil
}

// decodeMemoRecord decodes the entry of key k from its record raw. A
// record that does not decode, or that names an unsafe output, is an
// error: the caller reads the entry from the cache instead.
func decodeMemoRecord(k ActionID, raw string) (*Entry, error) {
	r := hint.NewReader(raw)
	e := &Entry{Key: k, Lean: true}
	e.Format = int(r.Int())
	e.Phase = r.Str()
	if nc := r.Len(); nc > 0 {
		e.Components = make([]Component, nc)
		for j := range e.Components {
			e.Components[j] = Component{Kind: r.Str(), Name: r.Str(), Value: r.Str()}
			if e.Components[j].Kind != KindOutput {
				return nil, fmt.Errorf("component of kind %q in a lean record", e.Components[j].Kind)
			}
		}
	}
	if no := r.Len(); no > 0 {
		e.Outputs = make([]OutputFile, no)
		for j := range e.Outputs {
			o := &e.Outputs[j]
			o.Path, o.Type = r.Str(), r.Str()
			o.Mode = uint32(r.Uint())
			r.Fixed(o.Digest[:])
			o.Size = r.Int()
			o.Target = r.Str()
			o.Temporary = r.Bool()
			o.MTime = r.Int()
		}
	}
	e.ExitCode = int(r.Int())
	r.Fixed(e.Stdout[:])
	r.Fixed(e.Stderr[:])
	e.Cost = r.Float()
	e.Iterations = r.Int()
	if m := r.Str(); m != "" {
		e.Metrics = []byte(m)
	}
	e.DurationMS = r.Int()
	created := r.Str()
	e.Host = r.Str()
	e.User = r.Str()
	if ni := r.Len(); ni > 0 {
		e.Inline = make([]InlineBlob, ni)
		for j := range e.Inline {
			b := &e.Inline[j]
			r.Fixed(b.Digest[:])
			b.Data = []byte(r.Str())
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if err := e.Created.UnmarshalBinary([]byte(created)); err != nil {
		return nil, fmt.Errorf("created: %w", err)
	}
	// The memo is a private file under its own checksum, and its
	// entries' keys were checked when they were read from the cache;
	// still, a foreign one must not hand restore an unsafe path.
	if err := checkFormat(e); err != nil {
		return nil, err
	}
	if err := checkOutputs(e.Outputs); err != nil {
		return nil, err
	}
	if err := checkInline(e, false); err != nil {
		return nil, err
	}
	return e, nil
}
