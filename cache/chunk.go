package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-run/cairn/cache/chunking"
	"github.com/cairn-run/cairn/internal/cores"
	"github.com/cairn-run/cairn/internal/fsx"
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
// hundred megabytes for each edited file. Chunks are cut where the
// components' names say (package chunking), so that an edited file
// changes its own chunk, an added or removed one its own and at most a
// neighbour.
const (
	ChunkKind      = "input"
	chunkThreshold = 1024
)

// Keyed is a list of components in key order with its key and, when it
// has more than chunkThreshold inputs, the chunks a format 6 entry keeps
// those in: all made in one pass over the components (NewKeyed), so that
// explaining a miss (which compares chunks) and storing the result (which
// writes the new ones) encode nothing again. It must not be modified.
type Keyed struct {
	comps  []Component
	key    ActionID
	chunks []Chunk
	starts []int // index in comps of each chunk's first input, then one past the last
}

// NewKeyed sorts comps if they are not (a copy) and computes their key
// and chunks.
func NewKeyed(comps []Component) *Keyed {
	if !slices.IsSortedFunc(comps, compareComponents) {
		comps = sortedComponents(comps)
	}
	k := &Keyed{comps: comps}
	lo, _ := slices.BinarySearchFunc(comps, ChunkKind, func(c Component, kind string) int { return strings.Compare(c.Kind, kind) })
	hi := lo
	for hi < len(comps) && comps[hi].Kind == ChunkKind {
		hi++
	}
	key := sha256.New()
	buf := make([]byte, 0, 64<<10)
	buf = binary.AppendUvarint(append(buf, keyMagic...), KeyFormat)
	header := slices.Clone(buf)
	encode := func(cs []Component) {
		for _, c := range cs {
			buf = appendComponent(buf, c)
			if len(buf) >= 60<<10 {
				key.Write(buf)
				buf = buf[:0]
			}
		}
	}
	encode(comps[:lo])
	if hi-lo <= chunkThreshold {
		encode(comps[lo:hi])
	} else {
		key.Write(buf)
		buf = buf[:0]
		ins := comps[lo:hi]
		cuts := chunking.Cuts(len(ins), func(i int) string { return ins[i].Name })
		sums := chunking.Encode(cuts, func(b []byte, i int) []byte { return appendComponent(b, ins[i]) }, header, key)
		for j, s := range sums {
			k.chunks = append(k.chunks, Chunk{Digest(s.Digest), cuts[j+1] - cuts[j], s.Size})
			k.starts = append(k.starts, lo+cuts[j])
		}
		k.starts = append(k.starts, hi)
	}
	encode(comps[hi:])
	key.Write(buf)
	k.key = ActionID(key.Sum(nil))
	return k
}

func appendComponent(b []byte, c Component) []byte {
	return appendString(appendString(appendString(b, c.Kind), c.Name), c.Value)
}

// Components returns k's components, sorted.
func (k *Keyed) Components() []Component { return k.comps }

// Key returns the key of k's components ([ComputeKey]).
func (k *Keyed) Key() ActionID { return k.key }

// Chunks returns the chunks k's inputs go to, in order; nil if they are
// few enough for an entry's body.
func (k *Keyed) Chunks() []Chunk { return k.chunks }

// ChunkComponents returns the components of k's chunk i.
func (k *Keyed) ChunkComponents(i int) []Component { return k.comps[k.starts[i]:k.starts[i+1]] }

// of reports whether k was made of e's very components and gives its key.
func (k *Keyed) of(e *Entry) bool {
	return k != nil && k.key == e.Key && len(k.comps) == len(e.Components) &&
		(len(k.comps) == 0 || &k.comps[0] == &e.Components[0])
}

// keyOr returns k's key, or, if k is nil, that of comps.
func (k *Keyed) keyOr(comps []Component) ActionID {
	if k != nil {
		return k.key
	}
	return ActionID(sha256.Sum256(EncodeComponents(comps)))
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

// chunkBatch bounds the chunks staged at once (their bytes are held until
// committed).
const chunkBatch = 256

// storeChunks puts k's input components, e's, in chunks if they are
// many (format 6), writing only the chunks not already in cas/ (encoded
// eight at a time, made durable chunkBatch at a time by CommitAll), and
// sets e.Chunks and e.Format.
func (c *Dir) storeChunks(e *Entry, k *Keyed) error {
	if k.chunks == nil {
		e.Chunks = nil
		return nil
	}
	e.Chunks = slices.Clone(k.chunks)
	for start := 0; start < len(k.chunks); start += chunkBatch {
		pend := make([]*PendingBlob, min(chunkBatch, len(k.chunks)-start))
		err := cores.Parallel(len(pend), 8, func(j int) error {
			i := start + j
			if ch := k.chunks[i]; !c.HasBlob(ch.Digest) {
				// Sorted already: encoded as EncodeComponents would.
				data := binary.AppendUvarint(append(make([]byte, 0, ch.Size), keyMagic...), KeyFormat)
				for _, comp := range k.ChunkComponents(i) {
					data = appendComponent(data, comp)
				}
				b, err := c.stage(bytes.NewReader(data), int64(len(data)), ch.Digest, nil)
				if err != nil {
					return fmt.Errorf("input chunk %s: %w", ch.Digest.Short(), fsx.NoSpace(err, c.root))
				}
				b.what, pend[j] = "input chunk "+ch.Digest.Short(), b
			}
			return nil
		})
		pend = slices.DeleteFunc(pend, func(b *PendingBlob) bool { return b == nil })
		if err != nil {
			for _, b := range pend {
				b.Discard()
			}
			return err
		}
		if err := CommitAll(pend); err != nil {
			return err
		}
	}
	e.Format = EntryFormatChunked
	return nil
}
