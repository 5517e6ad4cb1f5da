package inputs

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/cairn-run/cairn/cache"
)

// Gathered is what a phase's key is computed from, before any input file
// is hashed: every component but the command's and the input files',
// unredacted; the command's words; the input files (sorted by path, each
// once) with the stat expansion took; and, if some were hashed as they
// were found, their digests by file (zero: not hashed yet).
type Gathered struct {
	Comps   []cache.Component
	Argv    []string
	Files   []File
	Digests []cache.Digest
}

// Fingerprint hashes what the phase's key is computed from, as gathered
// in g: every component but the command's and the input files', the
// command's words, the input files by name and stat, and tokens, what
// keys hold of the sensitive values (redaction puts them in the key).
func (g *Gathered) Fingerprint(tokens []string) (fp [sha256.Size]byte) {
	// Written through a small buffer: a directory input of a million
	// files would otherwise build tens of MiB to hash at once.
	h := sha256.New()
	b := make([]byte, 0, 32<<10)
	flush := func() {
		h.Write(b)
		b = b[:0]
	}
	b = append(b, "cairn phase fingerprint 2\n"...)
	b = binary.AppendUvarint(b, uint64(len(tokens)))
	for _, t := range tokens {
		b = appendStr(b, t)
	}
	enc := cache.EncodeComponents(g.Comps)
	b = binary.AppendUvarint(b, uint64(len(enc)))
	flush()
	h.Write(enc)
	if g.Argv == nil {
		b = append(b, 0) // no command: its component is "null", not "[]"
	} else {
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(g.Argv)))
		for _, a := range g.Argv {
			b = appendStr(b, a)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(g.Files)))
	for _, f := range g.Files {
		if len(b) > cap(b)-len(f.Rel)-64 {
			flush()
		}
		b = appendStr(b, f.Rel)
		b = binary.AppendVarint(b, f.St.Size)
		b = binary.AppendVarint(b, f.St.MTime)
		b = binary.AppendVarint(b, f.St.CTime)
		b = binary.AppendUvarint(b, f.St.Ino)
		b = binary.AppendUvarint(b, uint64(f.St.Mode))
	}
	flush()
	h.Sum(fp[:0])
	return fp
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
