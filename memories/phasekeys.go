package memories

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/hint"
)

// phaseKeysFormat is the phase-key memory file's.
var phaseKeysFormat = hint.NewFormat("phase-keys", 2, "ws")

// PhaseKeys remembers, per phase, the key a full computation gave and a
// fingerprint of everything it was computed from, with the input files
// taken by their stat (size, mtime, ctime, inode, mode) rather than their
// content. While a phase's fingerprint is unchanged, its key is the
// remembered one: a no-op run then neither looks its inputs up in the
// digest memory nor formats and hashes their components. It is a private
// hint file of the workspace (.cairn/phasekeys): a lost or damaged one
// costs one full computation per phase, nothing else.
//
// A key is remembered only when every input's mtime and ctime lie clearly
// before the computation began (git's "racy" rule, as for the digest memory): a
// file edited afterwards within the same timestamp tick would otherwise
// keep its stat and hide the change. The file names the cairn build that
// wrote it; another build (whose key computation may differ) ignores it.
type PhaseKeys struct {
	path string

	mu      sync.Mutex
	entries map[string]phaseKey
	used    map[string]bool
	dirty   bool

	hits atomic.Int64 // lookups answered
}

type phaseKey struct {
	fp  [sha256.Size]byte
	key cache.ActionID
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
// count, then per entry the phase address, the fingerprint and the key.

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
	}
	return w.Finish()
}

// Lookup returns the key remembered for phase addr if it was computed
// from fingerprint fp.
func (pk *PhaseKeys) Lookup(addr string, fp [sha256.Size]byte) (cache.ActionID, bool) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	pk.used[addr] = true
	e, ok := pk.entries[addr]
	if !ok || e.fp != fp {
		return cache.ActionID{}, false
	}
	pk.hits.Add(1)
	return e.key, true
}

// Record remembers key as computed for phase addr from fingerprint fp.
func (pk *PhaseKeys) Record(addr string, fp [sha256.Size]byte, key cache.ActionID) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	pk.used[addr] = true
	if e, ok := pk.entries[addr]; ok && e.fp == fp && e.key == key {
		return
	}
	pk.entries[addr] = phaseKey{fp: fp, key: key}
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
func (pk *PhaseKeys) Entry(addr string) (fp [sha256.Size]byte, key cache.ActionID, ok bool) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	e, ok := pk.entries[addr]
	return e.fp, e.key, ok
}
