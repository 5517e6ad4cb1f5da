package memories

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/hint"
	"github.com/cairn-run/cairn/workspace"
)

// phaseKeysFormat is the phase-key memory file's.
var phaseKeysFormat = hint.NewFormat("phase-keys", 3, "ws")

// PhaseKeys remembers, per phase, the key a full computation gave and a
// fingerprint of everything it was computed from, with the input files
// taken by their stat (size, mtime, ctime, inode, mode) rather than their
// content. While a phase's fingerprint is unchanged, its key is the
// remembered one: a no-op run then neither looks its inputs up in the
// digest memory nor formats and hashes their components. It is a private
// hint file of the workspace (.cairn/phasekeys): a lost or damaged one
// costs one full computation per phase, nothing else.
//
// An input whose mtime or ctime does not lie clearly before the
// computation began (git's "racy" rule, as for the digest memory) may
// have been edited again within the same timestamp tick, keeping its stat:
// its stat does not vouch for its content. The key is remembered with
// such inputs listed (path, stat, and the digest the key holds), and a
// lookup answers only if each still has that content (git re-reads its
// racy index entries the same way): the run right after an edit is a
// no-op that reads only the edited file again. The file names the cairn
// build that wrote it; another build (whose key computation may differ)
// ignores it.
type PhaseKeys struct {
	path string

	mu      sync.Mutex
	entries map[string]phaseKey
	used    map[string]bool
	dirty   bool

	hits atomic.Int64 // lookups answered
}

type phaseKey struct {
	fp   [sha256.Size]byte
	key  cache.ActionID
	racy []RacyInput
}

// RacyInput is an input file that was racy when a key was computed: its
// path, its stat, and the digest of the content the key holds.
type RacyInput struct {
	Path   string
	Stat   workspace.FileStat
	Digest cache.Digest
}

// LoadPhaseKeys reads the memory at path; a missing, damaged or foreign
// file gives an empty memory.
func LoadPhaseKeys(path string) *PhaseKeys {
	pk := &PhaseKeys{path: path, entries: map[string]phaseKey{}, used: map[string]bool{}}
	r, ok := phaseKeysFormat.Read(path)
	if !ok {
		return pk
	}
	if entries, err := readPhaseKeys(r, hint.ExeID()); err == nil {
		pk.entries, pk.used = entries, make(map[string]bool, len(entries))
	}
	return pk
}

// The file (package hint) holds the build that wrote it, the entry
// count, then per entry the phase address, the fingerprint, the key and
// the racy inputs (count, then path, size, mtime, ctime, inode, mode and
// digest of each).

func readPhaseKeys(r *hint.Reader, build string) (map[string]phaseKey, error) {
	if r.Str() != build {
		return nil, fmt.Errorf("written by another build of cairn")
	}
	n := r.Len()
	entries := make(map[string]phaseKey, n)
	for i := 0; i < n && r.OK(); i++ {
		addr := r.Str()
		var pk phaseKey
		r.Fixed(pk.fp[:])
		r.Fixed(pk.key[:])
		if nr := r.Len(); nr > 0 {
			pk.racy = make([]RacyInput, nr)
			for j := range pk.racy {
				ri := &pk.racy[j]
				ri.Path = r.Str()
				ri.Stat = workspace.FileStat{Size: r.Int(), MTime: r.Int(), CTime: r.Int(), Ino: r.Uint(), Mode: fs.FileMode(r.Uint())}
				r.Fixed(ri.Digest[:])
			}
		}
		entries[addr] = pk
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return entries, nil
}

func encodePhaseKeys(entries map[string]phaseKey, build string) []byte {
	addrs := make([]string, 0, len(entries))
	for a := range entries {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	w := phaseKeysFormat.Writer(len(addrs) * (80 + sha256.Size))
	w.Str(build)
	w.Len(len(addrs))
	for _, a := range addrs {
		pk := entries[a]
		w.Str(a)
		w.Fixed(pk.fp[:])
		w.Fixed(pk.key[:])
		w.Len(len(pk.racy))
		for _, ri := range pk.racy {
			w.Str(ri.Path)
			st := ri.Stat
			w.Int(st.Size)
			w.Int(st.MTime)
			w.Int(st.CTime)
			w.Uint(st.Ino)
			w.Uint(uint64(st.Mode))
			w.Fixed(ri.Digest[:])
		}
	}
	return w.Finish()
}

// Lookup returns the key remembered for phase addr if it was computed
// from fingerprint fp and same(racy) holds of its racy inputs (same
// reports that each still has the digest listed; it is not called with
// the memory locked, and not at all when there are none).
func (pk *PhaseKeys) Lookup(addr string, fp [sha256.Size]byte, same func([]RacyInput) bool) (cache.ActionID, []RacyInput, bool) {
	pk.mu.Lock()
	pk.used[addr] = true
	e, ok := pk.entries[addr]
	pk.mu.Unlock()
	if !ok || e.fp != fp || len(e.racy) > 0 && !same(e.racy) {
		return cache.ActionID{}, nil, false
	}
	pk.hits.Add(1)
	return e.key, e.racy, true
}

// Record remembers key as computed for phase addr from fingerprint fp,
// with the inputs that were racy then.
func (pk *PhaseKeys) Record(addr string, fp [sha256.Size]byte, key cache.ActionID, racy []RacyInput) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	pk.used[addr] = true
	if e, ok := pk.entries[addr]; ok && e.fp == fp && e.key == key && slices.Equal(e.racy, racy) {
		return
	}
	pk.entries[addr] = phaseKey{fp: fp, key: key, racy: racy}
	pk.dirty = true
}

// Forget drops what is remembered for phase addr.
func (pk *PhaseKeys) Forget(addr string) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if _, ok := pk.entries[addr]; ok {
		delete(pk.entries, addr)
		pk.dirty = true
	}
}

// Save writes the memory back if it changed. Phases not looked up in
// this process are kept while the file stays small (another target
// selection, a phase commented out for a while); beyond that only the ones
// used are kept.
func (pk *PhaseKeys) Save() error {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if !pk.dirty {
		return nil
	}
	if len(pk.entries) > 2*len(pk.used)+1024 {
		for a := range pk.entries {
			if !pk.used[a] {
				delete(pk.entries, a)
			}
		}
	}
	if err := phaseKeysFormat.Save(pk.path, encodePhaseKeys(pk.entries, hint.ExeID()), 0o644); err != nil {
		return fmt.Errorf("save phase keys: %w", err)
	}
	pk.dirty = false
	return nil
}

// Hits returns how many lookups were answered.
func (pk *PhaseKeys) Hits() int64 { return pk.hits.Load() }

// Entry returns what is remembered for phase addr.
func (pk *PhaseKeys) Entry(addr string) (fp [sha256.Size]byte, key cache.ActionID, racy []RacyInput, ok bool) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	e, ok := pk.entries[addr]
	return e.fp, e.key, e.racy, ok
}
