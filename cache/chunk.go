package cache

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
)

// Chunk names one chunk of an entry's input components (format 6): a blob
// in cas/ holding the canonical encoding ([EncodeComponents]) of Count
// components of kind [ChunkKind], Size bytes long.
type Chunk struct {
	Digest Digest `json:"digest"`
	Count  int    `json:"count"`
	Size   int64  `json:"size"`
}

// An entry with more than chunkThreshold components of kind ChunkKind
// keeps those in chunks, not in its body: a phase reading a million files
// would otherwise write, and read back to explain a miss, an entry of a
// hundred megabytes for each edited file. A chunk starts at a component
// whose name hashes to a value with its low chunkBits bits zero, so
// boundaries depend only on the names there: an edited file changes its
// own chunk, an added or removed one its own and at most a neighbour.
// maxChunk bounds a run of names that never hit.
const (
	ChunkKind      = "input"
	chunkThreshold = 1024
	chunkBits      = 9
	maxChunk       = 1 << 14
)

// CutChunk is a chunk as cut: its components (a view) and bytes.
type CutChunk struct {
	Chunk
	Comps []Component
	Data  []byte
}

// CutChunks splits comps as a format 6 entry stores them: rest, the
// components its body holds, and the chunks its input components go to,
// in order. With at most chunkThreshold inputs nothing is cut: rest is
// comps and chunks is nil.
func CutChunks(comps []Component) (rest []Component, chunks []CutChunk) {
	n := 0
	for _, c := range comps {
		if c.Kind == ChunkKind {
			n++
		}
	}
	if n <= chunkThreshold {
		return comps, nil
	}
	inputs := make([]Component, 0, n)
	rest = make([]Component, 0, len(comps)-n)
	for _, c := range comps {
		if c.Kind == ChunkKind {
			inputs = append(inputs, c)
		} else {
			rest = append(rest, c)
		}
	}
	if !slices.IsSortedFunc(inputs, compareComponents) {
		slices.SortFunc(inputs, compareComponents)
	}
	start := 0
	cut := func(end int) {
		data := EncodeComponents(inputs[start:end])
		chunks = append(chunks, CutChunk{Chunk{Digest(sha256.Sum256(data)), end - start, int64(len(data))}, inputs[start:end], data})
		start = end
	}
	for i := 1; i < len(inputs); i++ {
		if i-start >= maxChunk || inputs[i].Name != inputs[i-1].Name && chunkStarts(inputs[i].Name) {
			cut(i)
		}
	}
	cut(len(inputs))
	return rest, chunks
}

// chunkStarts reports whether a chunk starts at name: FNV-1a, mixed by
// murmur3's finalizer so that its low bits depend on every byte.
func chunkStarts(name string) bool {
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
	return h&(1<<chunkBits-1) == 0
}

// DecodeChunk decodes the bytes of chunk ch, untrusted but for hashing to
// ch.Digest: the canonical encoding of exactly ch.Count components, all of
// kind ChunkKind, in ch.Size bytes. Every failure wraps [ErrCorrupt]. It
// never panics.
func DecodeChunk(ch Chunk, b []byte) ([]Component, error) {
	if int64(len(b)) != ch.Size {
		return nil, fmt.Errorf("chunk %s: %w: %d bytes, the entry says %d", ch.Digest.Short(), ErrCorrupt, len(b), ch.Size)
	}
	comps, err := DecodeComponents(b)
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", ch.Digest.Short(), err)
	}
	if len(comps) != ch.Count || len(comps) == 0 {
		return nil, fmt.Errorf("chunk %s: %w: %d components, the entry says %d", ch.Digest.Short(), ErrCorrupt, len(comps), ch.Count)
	}
	for _, c := range comps {
		if c.Kind != ChunkKind {
			return nil, fmt.Errorf("chunk %s: %w: component %q of kind %q", ch.Digest.Short(), ErrCorrupt, c.Name, c.Kind)
		}
	}
	return comps, nil
}

// ReadChunk reads and decodes chunk ch, verified against its digest (a
// damaged blob is quarantined, as [Dir.ReadBlob] does).
func (c *Dir) ReadChunk(ch Chunk) ([]Component, error) {
	c.chunkReads.Add(1)
	b, err := c.ReadBlob(ch.Digest)
	if err != nil {
		return nil, err
	}
	return DecodeChunk(ch, b)
}

// ChunkReads returns how many chunks this Dir has read.
func (c *Dir) ChunkReads() int64 { return c.chunkReads.Load() }

// FillChunks reads the chunks of e, read as a head (its body alone, as
// [ParseEntry] and [Dir.GetEntryHead] give it), appends their components
// to e's, checks that they all hash to e's key and clears e.Lean. An
// error wraps ErrCorrupt when the entry or a chunk is wrong, ErrNotFound
// when a chunk is gone; any other is an I/O error. A damaged chunk is
// quarantined only if quarantine is set. An entry without chunks is left
// as it is.
func (c *Dir) FillChunks(e *Entry, quarantine bool) error {
	if len(e.Chunks) == 0 || !e.Lean || quarantine {
		return c.fillChunks(e, c.ReadChunk)
	}
	return c.fillChunks(e, func(ch Chunk) ([]Component, error) {
		f, compressed, err := c.openBlob(ch.Digest)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		var buf bytes.Buffer
		bad, err := c.ReadVerified(&buf, f, compressed, ch.Digest)
		if err == nil && bad != nil {
			err = fmt.Errorf("chunk %s: %w: %w", ch.Digest.Short(), ErrCorrupt, bad)
		}
		if err != nil {
			return nil, err
		}
		return DecodeChunk(ch, buf.Bytes())
	})
}

func (c *Dir) fillChunks(e *Entry, read func(Chunk) ([]Component, error)) error {
	if len(e.Chunks) == 0 || !e.Lean {
		return nil
	}
	comps := slices.Clone(e.Components)
	for i, ch := range e.Chunks {
		cc, err := read(ch)
		if err != nil {
			return err
		}
		if i > 0 && compareComponents(comps[len(comps)-1], cc[0]) > 0 {
			return fmt.Errorf("chunk %s: %w: out of order", ch.Digest.Short(), ErrCorrupt)
		}
		comps = append(comps, cc...)
	}
	if got := ComputeKey(comps); got != e.Key {
		return fmt.Errorf("%w: key %s, but its components and chunks hash to %s", ErrCorrupt, e.Key.Short(), got.Short())
	}
	e.Components, e.Lean = comps, false
	return nil
}

// storeChunks puts e's input components in chunks if it has many (format
// 6), writing only the chunks not already in cas/, and sets e.Chunks and
// e.Format.
func (c *Dir) storeChunks(e *Entry) error {
	_, chunks := CutChunks(e.Components)
	if chunks == nil {
		e.Chunks = nil
		return nil
	}
	e.Chunks = make([]Chunk, len(chunks))
	for i, ch := range chunks {
		if !c.HasBlob(ch.Digest) {
			if _, err := c.PutBytes(ch.Data); err != nil {
				return fmt.Errorf("input chunk: %w", err)
			}
		}
		e.Chunks[i] = ch.Chunk
	}
	e.Format = EntryFormatChunked
	return nil
}
