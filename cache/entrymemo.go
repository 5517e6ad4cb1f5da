package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/internal/fsx"
)

// entryMemoHeader starts an entry memo file.
const entryMemoHeader = "cairn-entry-memo 1\n"

// entryMemoSlack is how long before an entry was decoded its file's ctime
// must lie for the memo to be trusted (the kernel's coarse clock stamps
// files up to a jiffy behind the wall clock; 50 ms is ample).
const entryMemoSlack = 50 * time.Millisecond

// EntryMemo remembers action entries already read and verified, by the
// stat of their file (size, mtime, ctime, inode), so a run that finds the
// same entries as the last one (a no-op) does not read, checksum, decode
// and re-verify each of them again. It is a workspace's private file, never
// part of the cache: losing or damaging it costs one full read of each
// entry, nothing else.
//
// An entry file is written once and published by link(2); anything that
// replaces or rewrites it changes its inode or its ctime, and ctime cannot
// be set back by a user. A remembered entry is trusted only when its
// file's ctime lies clearly before the moment it was read (git's "racy"
// rule), and never when signatures are required (the memo does not know
// which key checked them).
type EntryMemo struct {
	path string
	now  func() time.Time

	mu      sync.Mutex
	entries map[ActionID]memoEntry
	used    map[ActionID]bool
	dirty   bool

	hits atomic.Int64
}

type memoEntry struct {
	stamp    entryStamp
	recorded int64 // ns: when the entry was read and verified
	e        *Entry
}

// entryStamp is what the memo compares of an entry file.
type entryStamp struct {
	size, mtime, ctime int64
	ino                uint64
}

func stampOf(fi fs.FileInfo) (entryStamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return entryStamp{}, false
	}
	return entryStamp{
		size:  fi.Size(),
		mtime: fi.ModTime().UnixNano(),
		ctime: int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec),
		ino:   st.Ino,
	}, true
}

// LoadEntryMemo reads the memo at path; a missing or damaged file gives an
// empty memo.
func LoadEntryMemo(path string) *EntryMemo {
	m := &EntryMemo{path: path, now: time.Now, entries: map[ActionID]memoEntry{}, used: map[ActionID]bool{}}
	b, err := os.ReadFile(path)
	if err != nil {
		return m
	}
	if entries, err := decodeEntryMemo(b); err == nil {
		m.entries = entries
	}
	return m
}

// Hits reports how many lookups the memo answered.
func (m *EntryMemo) Hits() int64 { return m.hits.Load() }

// has reports whether the memo holds an entry for key.
func (m *EntryMemo) has(key ActionID) bool {
	m.mu.Lock()
	_, ok := m.entries[key]
	m.mu.Unlock()
	return ok
}

// lookup returns the remembered entry for key if fi, the entry file's
// current stat, still matches and the memory is not racy.
func (m *EntryMemo) lookup(key ActionID, fi fs.FileInfo) *Entry {
	st, ok := stampOf(fi)
	if !ok {
		return nil
	}
	m.mu.Lock()
	me, ok := m.entries[key]
	if ok {
		m.used[key] = true
	}
	m.mu.Unlock()
	if !ok || me.stamp != st || st.ctime >= me.recorded-int64(entryMemoSlack) {
		return nil
	}
	m.hits.Add(1)
	return cloneEntry(me.e)
}

// cloneEntry copies e deeply enough that a caller changing its copy
// cannot change the memo's.
func cloneEntry(e *Entry) *Entry {
	c := *e
	c.Components = slices.Clone(e.Components)
	c.Outputs = slices.Clone(e.Outputs)
	c.Metrics = slices.Clone(e.Metrics)
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
// process are kept while the memo stays small; beyond that only the ones
// used are kept, so the file tracks the workspace rather than growing.
func (m *EntryMemo) Save() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirty {
		return nil
	}
	if len(m.entries) > 2*len(m.used)+1024 {
		for k := range m.entries {
			if !m.used[k] {
				delete(m.entries, k)
			}
		}
	}
	b := encodeEntryMemo(m.entries)
	if err := fsx.WriteFileAtomic(m.path, b, 0o644, "ws", false, false); err != nil {
		return fmt.Errorf("save entry memo: %w", err)
	}
	m.dirty = false
	return nil
}

// The file is the header, then one record per entry (key order), then the
// SHA-256 of everything before it. Integers are varints, strings and byte
// strings are length-prefixed.

func encodeEntryMemo(entries map[ActionID]memoEntry) []byte {
	keys := make([]ActionID, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i][:], keys[j][:]) < 0 })
	w := memoWriter{b: make([]byte, 0, 64+len(keys)*512)}
	w.b = append(w.b, entryMemoHeader...)
	w.uint(uint64(len(keys)))
	for _, k := range keys {
		me := entries[k]
		e := me.e
		w.b = append(w.b, k[:]...)
		w.int(me.stamp.size)
		w.int(me.stamp.mtime)
		w.int(me.stamp.ctime)
		w.uint(me.stamp.ino)
		w.int(me.recorded)
		w.int(int64(e.Format))
		w.str(e.Phase)
		w.uint(uint64(len(e.Components)))
		for _, c := range e.Components {
			w.str(c.Kind)
			w.str(c.Name)
			w.str(c.Value)
		}
		w.uint(uint64(len(e.Outputs)))
		for _, o := range e.Outputs {
			w.str(o.Path)
			w.str(o.Type)
			w.uint(uint64(o.Mode))
			w.b = append(w.b, o.Digest[:]...)
			w.int(o.Size)
			w.str(o.Target)
		}
		w.int(int64(e.ExitCode))
		w.b = append(w.b, e.Stdout[:]...)
		w.b = append(w.b, e.Stderr[:]...)
		w.uint(math.Float64bits(e.Cost))
		w.int(e.Iterations)
		w.str(string(e.Metrics))
		w.int(e.DurationMS)
		created, _ := e.Created.MarshalBinary()
		w.str(string(created))
		w.str(e.Host)
		w.str(e.User)
	}
	sum := sha256.Sum256(w.b)
	return append(w.b, sum[:]...)
}

// maxMemoRecords bounds what a damaged count can make the decoder allocate.
const maxMemoRecords = 1 << 24

func decodeEntryMemo(b []byte) (map[ActionID]memoEntry, error) {
	if len(b) < len(entryMemoHeader)+sha256.Size || string(b[:len(entryMemoHeader)]) != entryMemoHeader {
		return nil, errors.New("not an entry memo")
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, errors.New("checksum mismatch")
	}
	r := memoReader{s: string(body[len(entryMemoHeader):])}
	n := r.count(maxMemoRecords)
	out := make(map[ActionID]memoEntry, n)
	for i := 0; i < n && r.err == nil; i++ {
		var k ActionID
		r.fixed(k[:])
		var me memoEntry
		me.stamp.size = r.int()
		me.stamp.mtime = r.int()
		me.stamp.ctime = r.int()
		me.stamp.ino = r.uint()
		me.recorded = r.int()
		e := &Entry{Key: k}
		e.Format = int(r.int())
		e.Phase = r.str()
		if nc := r.count(math.MaxInt); nc > 0 {
			e.Components = make([]Component, nc)
			for j := range e.Components {
				e.Components[j] = Component{Kind: r.str(), Name: r.str(), Value: r.str()}
			}
		}
		if no := r.count(math.MaxInt); no > 0 {
			e.Outputs = make([]OutputFile, no)
			for j := range e.Outputs {
				o := &e.Outputs[j]
				o.Path, o.Type = r.str(), r.str()
				o.Mode = uint32(r.uint())
				r.fixed(o.Digest[:])
				o.Size = r.int()
				o.Target = r.str()
			}
		}
		e.ExitCode = int(r.int())
		r.fixed(e.Stdout[:])
		r.fixed(e.Stderr[:])
		e.Cost = math.Float64frombits(r.uint())
		e.Iterations = r.int()
		if m := r.str(); m != "" {
			e.Metrics = []byte(m)
		}
		e.DurationMS = r.int()
		if created := r.str(); r.err == nil {
			if err := e.Created.UnmarshalBinary([]byte(created)); err != nil {
				return nil, fmt.Errorf("record %d: created: %w", i, err)
			}
		}
		e.Host = r.str()
		e.User = r.str()
		if r.err != nil {
			break
		}
		// The memo is a private file under its own checksum, and its
		// entries' keys were checked when they were read from the cache;
		// still, a foreign one must not hand restore an unsafe path.
		if e.Format != EntryFormat {
			return nil, fmt.Errorf("record %d: format %d", i, e.Format)
		}
		if err := checkOutputs(e.Outputs); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		me.e = e
		out[k] = me
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.s) != 0 {
		return nil, errors.New("trailing bytes")
	}
	return out, nil
}

type memoWriter struct{ b []byte }

func (w *memoWriter) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *memoWriter) int(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *memoWriter) str(s string) {
	w.uint(uint64(len(s)))
	w.b = append(w.b, s...)
}

// memoReader reads one string holding the whole memo, so the strings it
// returns are slices of it rather than an allocation each.
type memoReader struct {
	s   string
	err error
}

var errMemoShort = errors.New("entry memo cut short")

func (r *memoReader) uint() uint64 {
	var v uint64
	for i := 0; i < len(r.s) && i < binary.MaxVarintLen64; i++ {
		c := r.s[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break // overflows 64 bits
			}
			r.s = r.s[i+1:]
			return v
		}
	}
	if r.err == nil {
		r.err = errMemoShort
	}
	r.s = ""
	return 0
}

func (r *memoReader) int() int64 {
	u := r.uint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

// count reads a length that cannot exceed max, nor what is left after it
// (each counted item takes at least one byte).
func (r *memoReader) count(max int) int {
	v := r.uint()
	if v > uint64(max) || v > uint64(len(r.s)) {
		if r.err == nil {
			r.err = errMemoShort
		}
		r.s = ""
		return 0
	}
	return int(v)
}

func (r *memoReader) str() string {
	n := r.count(math.MaxInt)
	s := r.s[:n]
	r.s = r.s[n:]
	return s
}

func (r *memoReader) fixed(dst []byte) {
	if len(r.s) < len(dst) {
		if r.err == nil {
			r.err = errMemoShort
		}
		r.s = ""
		return
	}
	copy(dst, r.s)
	r.s = r.s[len(dst):]
}
