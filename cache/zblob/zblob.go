// Package zblob is how the cache compresses a blob: a trial on a sample
// decides, the fastest zstd level encodes (whole buffers or a stream), and
// pooled synchronous decoders read it back.
package zblob

import (
	"io"
	"sync"

	"github.com/cairn-run/cairn/internal/cores"
	"github.com/klauspost/compress/zstd"
)

// Compression is decided per blob from a sample, so incompressible data
// (model weights, archives, random bytes) costs one small trial instead of
// a full pass, and stays raw: a raw blob is byte-identical to the content,
// so it can later be restored by reflink or copy_file_range without decoding.
const (
	// SampleSize is how much of a blob is test-compressed. It is also the
	// size below which a blob is compressed in one call, in memory.
	SampleSize = 256 << 10
	// A blob is stored compressed only if its sample shrinks below
	// compressNum/compressDen of its size.
	compressNum, compressDen = 9, 10
	// encoderLevel is used for both the trial and the stored blob: the
	// fastest level keeps puts near disk speed and lets the trial output be
	// stored as-is for small blobs.
	encoderLevel = zstd.SpeedFastest
)

// blockEncoder compresses whole buffers (EncodeAll); it is safe for
// concurrent use.
var blockEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(encoderLevel), zstd.WithEncoderConcurrency(cores.N))
	if err != nil {
		panic(err) // only for invalid options
	}
	return e
})

// CompressSample compresses sample and reports whether that is worth it. If
// it is, the compressed bytes are returned: when the sample is the whole
// blob they are the stored form.
func CompressSample(sample []byte) ([]byte, bool) {
	if len(sample) == 0 {
		return nil, false
	}
	z := blockEncoder().EncodeAll(sample, make([]byte, 0, len(sample)))
	if int64(len(z))*compressDen >= int64(len(sample))*compressNum {
		return nil, false
	}
	return z, true
}

// NewStreamEncoder returns a zstd writer to w for blobs larger than the
// sample. It compresses on cores.N goroutines while the caller hashes;
// the caller must Close it.
func NewStreamEncoder(w io.Writer) (*zstd.Encoder, error) {
	return zstd.NewWriter(w, zstd.WithEncoderLevel(encoderLevel), zstd.WithEncoderConcurrency(cores.N))
}

// streamDecoders are synchronous (concurrency 1) decoders: they start no
// goroutines, so a decoder dropped by the pool leaks nothing.
var streamDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		panic(err) // only for invalid options
	}
	return d
}}

// Decoder is a pooled zstd stream reader; call Release when done.
type Decoder struct{ *zstd.Decoder }

func NewDecoder(r io.Reader) (Decoder, error) {
	d := streamDecoders.Get().(*zstd.Decoder)
	if err := d.Reset(r); err != nil {
		streamDecoders.Put(d)
		return Decoder{}, err
	}
	return Decoder{d}, nil
}

func (d Decoder) Release() {
	d.Reset(nil) // drop the reference to the file
	streamDecoders.Put(d.Decoder)
}
