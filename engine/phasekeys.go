package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/hint"
	"github.com/cairn-run/cairn/spec"
	"github.com/cairn-run/cairn/workspace"
)

// phaseKeysFormat is the phase-key memory file's.
var phaseKeysFormat = hint.NewFormat("phase-keys", 2, "ws")

// phaseKeys remembers, per phase, the key a full computation gave and a
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
type phaseKeys struct {
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

// loadPhaseKeys reads the memory at path; a missing, damaged or foreign
// file gives an empty memory.
func loadPhaseKeys(path string) *phaseKeys {
	pk := &phaseKeys{path: path, entries: map[string]phaseKey{}, used: map[string]bool{}}
	r, ok := phaseKeysFormat.Read(path)
	if !ok {
		return pk
	}
	if entries, err := readPhaseKeys(r, spec.ExeID()); err == nil {
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

// lookup returns the key remembered for phase addr if it was computed
// from fingerprint fp.
func (pk *phaseKeys) lookup(addr string, fp [sha256.Size]byte) (cache.ActionID, bool) {
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

// record remembers key as computed for phase addr from fingerprint fp.
func (pk *phaseKeys) record(addr string, fp [sha256.Size]byte, key cache.ActionID) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	pk.used[addr] = true
	if e, ok := pk.entries[addr]; ok && e.fp == fp && e.key == key {
		return
	}
	pk.entries[addr] = phaseKey{fp: fp, key: key}
	pk.dirty = true
}

// forget drops what is remembered for phase addr.
func (pk *phaseKeys) forget(addr string) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if _, ok := pk.entries[addr]; ok {
		delete(pk.entries, addr)
		pk.dirty = true
	}
}

// save writes the memory back if it changed. Phases not looked up in
// this process are kept while the file stays small (another target
// selection, a phase commented out for a while); beyond that only the ones
// used are kept.
func (pk *phaseKeys) save() error {
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
	if err := phaseKeysFormat.Save(pk.path, encodePhaseKeys(pk.entries, spec.ExeID()), 0o644); err != nil {
		return fmt.Errorf("save phase keys: %w", err)
	}
	pk.dirty = false
	return nil
}

// fingerprint hashes what phase p's key is computed from, as gathered in
// g: every component but the command's and the input files', the
// command's words, the input files by name and stat, and the sensitive
// values' tokens (redaction puts them in the key). ok is false when an
// input has no stat (files found by walking a directory are not stat'ed
// before they are hashed): such a phase always takes the full path.
func (e *Engine) fingerprint(g *gathered) (fp [sha256.Size]byte, ok bool) {
	b := make([]byte, 0, 1024)
	b = append(b, "cairn phase fingerprint 2\n"...)
	b = binary.AppendUvarint(b, uint64(len(e.spec.SensitiveValues)))
	for _, v := range e.spec.SensitiveValues {
		b = appendStr(b, sensitiveToken(v)) // what keys hold of it, never the value
	}
	enc := cache.EncodeComponents(g.comps)
	b = binary.AppendUvarint(b, uint64(len(enc)))
	b = append(b, enc...)
	if g.argv == nil {
		b = append(b, 0) // no command: its component is "null", not "[]"
	} else {
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(g.argv)))
		for _, a := range g.argv {
			b = appendStr(b, a)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(g.files)))
	for _, f := range g.files {
		if !f.stated {
			return fp, false
		}
		b = appendStr(b, f.rel)
		b = binary.AppendVarint(b, f.st.Size)
		b = binary.AppendVarint(b, f.st.MTime)
		b = binary.AppendVarint(b, f.st.CTime)
		b = binary.AppendUvarint(b, f.st.Ino)
		b = binary.AppendUvarint(b, uint64(f.st.Mode))
	}
	return sha256.Sum256(b), true
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// calm reports whether every input of g was last modified (its mtime and
// its ctime) clearly before began (the racy rule): no edit made after
// began can have left an input with the stat g holds.
func (g *gathered) calm(began int64) bool {
	for _, f := range g.files {
		if !f.stated || workspace.RacyAt(f.st, began) {
			return false
		}
	}
	return true
}
