package engine

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/workspace"
)

// fingerprint hashes what phase p's key is computed from, as gathered in
// g: every component but the command's and the input files', the
// command's words, the input files by name and stat, and the sensitive
// values' tokens (redaction puts them in the key). ok is false when an
// input has no stat (files found by walking a directory are not stat'ed
// before they are hashed): such a phase always takes the full path.
func (e *Engine) fingerprint(g *gathered) (fp [sha256.Size]byte, ok bool) {
	// Written through a small buffer: a directory input of a million
	// files would otherwise build tens of MiB to hash at once.
	h := sha256.New()
	b := make([]byte, 0, 32<<10)
	flush := func() {
		h.Write(b)
		b = b[:0]
	}
	b = append(b, "cairn phase fingerprint 2\n"...)
	b = binary.AppendUvarint(b, uint64(len(e.spec.SensitiveValues)))
	for _, v := range e.spec.SensitiveValues {
		b = appendStr(b, sensitiveToken(v)) // what keys hold of it, never the value
	}
	enc := cache.EncodeComponents(g.comps)
	b = binary.AppendUvarint(b, uint64(len(enc)))
	flush()
	h.Write(enc)
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
		if len(b) > cap(b)-len(f.rel)-64 {
			flush()
		}
		b = appendStr(b, f.rel)
		b = binary.AppendVarint(b, f.st.Size)
		b = binary.AppendVarint(b, f.st.MTime)
		b = binary.AppendVarint(b, f.st.CTime)
		b = binary.AppendUvarint(b, f.st.Ino)
		b = binary.AppendUvarint(b, uint64(f.st.Mode))
	}
	flush()
	h.Sum(fp[:0])
	return fp, true
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
