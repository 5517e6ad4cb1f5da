package cache

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// checkInlineMaps is checkInline as it was before it avoided maps: the
// reference the current one must agree with on every entry.
func checkInlineMaps(e *Entry, hash bool) error {
	if len(e.Inline) == 0 {
		return nil
	}
	refs := make(map[Digest]int64, len(e.Outputs)+2) // size, or -1 for a log
	for _, o := range e.Outputs {
		if o.Type == TypeFile {
			refs[o.Digest] = o.Size
		}
	}
	for _, d := range []Digest{e.Stdout, e.Stderr} {
		if _, ok := refs[d]; !d.IsZero() && !ok {
			refs[d] = -1
		}
	}
	seen := make(map[Digest]bool, len(e.Inline))
	for _, b := range e.Inline {
		switch size, ok := refs[b.Digest]; {
		case seen[b.Digest]:
			return fmt.Errorf("inline blob %s listed twice", b.Digest.Short())
		case !ok:
			return fmt.Errorf("inline blob %s is referenced by nothing", b.Digest.Short())
		case size >= 0 && size != int64(len(b.Data)):
			return fmt.Errorf("inline blob %s holds %d bytes, its output %d", b.Digest.Short(), len(b.Data), size)
		case hash && HashBytes(b.Data) != b.Digest:
			return fmt.Errorf("inline blob %s: content hashes to %s", b.Digest.Short(), HashBytes(b.Data).Short())
		}
		seen[b.Digest] = true
	}
	return nil
}

// inlineCase builds an entry from b: few distinct contents (so digests
// repeat among outputs, logs and inline blobs), the zero digest among
// them, and up to 40 outputs and inline blobs (the new code switches to
// maps beyond 16).
func inlineCase(b []byte) *Entry {
	next := func() int {
		if len(b) == 0 {
			return 0
		}
		v := int(b[0])
		b = b[1:]
		return v
	}
	contents := []string{"", "a", "bb", "ccc"}
	digest := func(v int) Digest {
		if v%5 == 4 {
			return Digest{}
		}
		return HashBytes([]byte(contents[v%5]))
	}
	types := []string{TypeFile, TypeFile, TypeDir, TypeSymlink}
	e := &Entry{Stdout: digest(next()), Stderr: digest(next())}
	for range next() % 41 {
		e.Outputs = append(e.Outputs, OutputFile{Type: types[next()%4], Digest: digest(next()), Size: int64(next() % 4)})
	}
	for range next() % 41 {
		v := next()
		e.Inline = append(e.Inline, InlineBlob{Digest: digest(v), Data: []byte(contents[next()%4])})
	}
	return e
}

func compareCheckInline(t *testing.T, e *Entry) {
	t.Helper()
	for _, hash := range []bool{false, true} {
		got, want := checkInline(e, hash), checkInlineMaps(e, hash)
		if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
			t.Fatalf("checkInline(hash %v) = %v, the map-based one %v; entry %+v", hash, got, want, e)
		}
	}
}

// TestCheckInlineAsWithMaps: checkInline, without maps for small entries,
// accepts and refuses exactly what the map-based version did, with the
// same error.
func TestCheckInlineAsWithMaps(t *testing.T) {
	a, bb := HashBytes([]byte("a")), HashBytes([]byte("bb"))
	// Two output files with one digest and different sizes: the map kept
	// the last one's size.
	compareCheckInline(t, &Entry{
		Outputs: []OutputFile{{Type: TypeFile, Digest: bb, Size: 3}, {Type: TypeFile, Digest: bb, Size: 2}},
		Inline:  []InlineBlob{{Digest: bb, Data: []byte("bb")}},
	})
	// A log with an output's digest; a zero log digest; a blob twice.
	compareCheckInline(t, &Entry{
		Stdout:  a,
		Outputs: []OutputFile{{Type: TypeFile, Digest: a, Size: 1}},
		Inline:  []InlineBlob{{Digest: a, Data: []byte("a")}, {Digest: a, Data: []byte("a")}},
	})
	compareCheckInline(t, &Entry{Inline: []InlineBlob{{Data: []byte{}}}})

	r := rand.New(rand.NewPCG(1, 2))
	n := 20000
	if longTier() {
		n = 2000000
	}
	buf := make([]byte, 200)
	for range n {
		for i := range buf {
			buf[i] = byte(r.UintN(256))
		}
		compareCheckInline(t, inlineCase(buf))
	}
}

func FuzzCheckInline(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0, 2, 0, 3, 1, 0, 2, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) { compareCheckInline(t, inlineCase(b)) })
}
