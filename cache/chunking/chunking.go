// Package chunking cuts a long sorted list of named items into chunks
// whose boundaries depend only on the names there, and hashes each
// chunk's encoding beside a running hash of them all: how a cache entry
// keeps a million input components in chunks, one of which an edit
// changes, while its key stays the hash of the whole list.
package chunking

import (
	"crypto/sha256"
	"hash"

	"github.com/cairn-run/cairn/internal/cores"
)

const (
	// Bits of a name's hash that must be zero for a chunk to start at it:
	// chunks of 512 items on average.
	Bits = 9
	// Max bounds a chunk of names that never start one.
	Max = 1 << 14
)

// Starts reports whether a chunk starts at name: FNV-1a, mixed by
// murmur3's finalizer so that its low bits depend on every byte.
func Starts(name string) bool {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h&(1<<Bits-1) == 0
}

// Cuts returns the index of the first item of each chunk of n items
// (name(i) is item i's name, sorted), then n. A chunk starts at an item
// whose name Starts one, unlike the name before it, or after Max items.
// Whether a name starts a chunk is decided on all cores (a million items
// are a million hashes of their names); where Max cuts depends on the
// cuts before, so that pass is serial.
func Cuts(n int, name func(i int) string) []int {
	if n == 0 {
		return []int{0}
	}
	starts := make([]bool, n)
	_ = cores.Ranges(n, cores.N, 1<<14, func(lo, hi int) error {
		for i := max(lo, 1); i < hi; i++ {
			s := name(i)
			starts[i] = s != name(i-1) && Starts(s)
		}
		return nil
	})
	cuts := []int{0}
	for i := 1; i < n; i++ {
		if starts[i] || i-cuts[len(cuts)-1] >= Max {
			cuts = append(cuts, i)
		}
	}
	return append(cuts, n)
}

// A Sum is one chunk's: the SHA-256 of header and its items' encoding,
// and that many bytes.
type Sum struct {
	Digest [sha256.Size]byte
	Size   int64
}

// Encode encodes the chunks that cuts delimit (appendItem appends item
// i's encoding to b) and returns their sums, writing every item's
// encoding, in order and without header, to all. The items are encoded
// twice, for the chunks here and for all on a goroutine of its own: both
// hash every byte (a hundred megabytes for a million items), and two
// passes that share nothing keep both cores busy where handing buffers
// from one to the other left one idle at each hand-off.
func Encode(cuts []int, appendItem func(b []byte, i int) []byte, header []byte, all hash.Hash) []Sum {
	n := cuts[len(cuts)-1]
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 0, 64<<10)
		for i := range n {
			if b = appendItem(b, i); len(b) >= 60<<10 {
				all.Write(b)
				b = b[:0]
			}
		}
		all.Write(b)
	}()
	sums := make([]Sum, 0, len(cuts)-1)
	h := sha256.New()
	var b []byte
	for j := 0; j+1 < len(cuts); j++ {
		b = b[:0]
		for i := cuts[j]; i < cuts[j+1]; i++ {
			b = appendItem(b, i)
		}
		h.Reset()
		h.Write(header)
		h.Write(b)
		var s Sum
		h.Sum(s.Digest[:0])
		s.Size = int64(len(header) + len(b))
		sums = append(sums, s)
	}
	<-done
	return sums
}
