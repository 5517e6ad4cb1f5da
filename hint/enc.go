// The encoding of hint files: varints, length-prefixed strings and
// fixed-size byte arrays, framed by a header line and a checksum
// trailer. A Reader never panics and never allocates more than its input
// can hold, whatever the bytes: a damaged file is an error, and the
// caller then does the work the file would have saved.
//
// The trailer is the XXH64 of everything before it (8 bytes, little
// endian). It guards a private file of the user's own workspace against
// torn writes and damaged disks, not against an adversary (who could as
// well rewrite the file and its trailer), so a fast non-cryptographic
// hash is enough: it checks the megabytes of a large memo at memory
// speed. Anything read from a shared cache is checked with SHA-256 by its
// own reader.

package hint

import (
	"encoding/binary"
	"errors"
	"math"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// TrailerSize is the size of the checksum that ends every record.
const TrailerSize = 8

// ErrDamaged is returned for bytes that are not a well-formed record.
var ErrDamaged = errors.New("damaged memo")

// Writer appends values to a buffer.
type Writer struct{ B []byte }

// NewWriter starts a buffer with header (its first line).
func NewWriter(header string, sizeHint int) *Writer {
	w := &Writer{B: make([]byte, 0, len(header)+sizeHint+TrailerSize)}
	w.B = append(w.B, header...)
	return w
}

func (w *Writer) Uint(v uint64) { w.B = binary.AppendUvarint(w.B, v) }
func (w *Writer) Int(v int64)   { w.B = binary.AppendVarint(w.B, v) }
func (w *Writer) Len(n int)     { w.Uint(uint64(n)) }
func (w *Writer) Float(v float64) {
	w.Uint(math.Float64bits(v))
}
func (w *Writer) Bool(v bool) {
	if v {
		w.B = append(w.B, 1)
	} else {
		w.B = append(w.B, 0)
	}
}
func (w *Writer) Str(s string) {
	w.Uint(uint64(len(s)))
	w.B = append(w.B, s...)
}
func (w *Writer) Fixed(b []byte) { w.B = append(w.B, b...) }

// NilLen writes the length of a slice or map that may be nil, keeping nil
// apart from empty.
func (w *Writer) NilLen(n int, isNil bool) {
	if isNil {
		w.Uint(0)
		return
	}
	w.Uint(uint64(n) + 1)
}

// Strs writes a string slice, keeping nil apart from empty.
func (w *Writer) Strs(ss []string) {
	w.NilLen(len(ss), ss == nil)
	for _, s := range ss {
		w.Str(s)
	}
}

// Finish appends the checksum of everything written and returns the bytes.
func (w *Writer) Finish() []byte { return AppendTrailer(w.B) }

// AppendTrailer appends to b the checksum trailer of b: header and body
// become a record Open accepts (fuzz tests seal damaged bodies with it).
func AppendTrailer(b []byte) []byte {
	return binary.LittleEndian.AppendUint64(b, xxhash.Sum64(b))
}

// Reader reads values from one string holding the whole record, so the
// strings it returns are slices of it rather than an allocation each. The
// first error sticks: later reads return zero values.
type Reader struct {
	s   string
	err error
}

// Open checks b's header and checksum trailer and returns a Reader of what
// lies between them.
func Open(b []byte, header string) (*Reader, error) {
	body, err := frame(b, header)
	if err != nil {
		return nil, err
	}
	return &Reader{s: string(body)}, nil
}

// OpenOwned is Open without copying b: the strings read are slices of b's
// own memory, so the caller hands b over and must never change it again
// (a buffer just read from a file and then dropped). A memo of megabytes
// then costs no second copy.
func OpenOwned(b []byte, header string) (*Reader, error) {
	body, err := frame(b, header)
	if err != nil {
		return nil, err
	}
	if len(body) == 0 {
		return &Reader{}, nil
	}
	return &Reader{s: unsafe.String(unsafe.SliceData(body), len(body))}, nil
}

// frame checks b's header and checksum trailer and returns what lies
// between them.
func frame(b []byte, header string) ([]byte, error) {
	if len(b) < len(header)+TrailerSize || string(b[:len(header)]) != header {
		return nil, errors.New("not a memo of this format")
	}
	body, sum := b[:len(b)-TrailerSize], b[len(b)-TrailerSize:]
	if xxhash.Sum64(body) != binary.LittleEndian.Uint64(sum) {
		return nil, errors.New("memo checksum mismatch")
	}
	return body[len(header):], nil
}

// NewReader reads the values of s, a nested record (written with
// Writer.Str) read earlier.
func NewReader(s string) *Reader { return &Reader{s: s} }

// Rest returns what is left to read: a caller that keeps records in
// place slices them out of successive Rests.
func (r *Reader) Rest() string { return r.s }

// OK reports that nothing has gone wrong so far.
func (r *Reader) OK() bool { return r.err == nil }

// Err returns the first error met, or one if bytes are left over: call it
// once everything is read.
func (r *Reader) Err() error {
	if r.err == nil && r.s != "" {
		return errors.New("damaged memo: trailing bytes")
	}
	return r.err
}

func (r *Reader) fail() {
	if r.err == nil {
		r.err = ErrDamaged
	}
	r.s = ""
}

func (r *Reader) Uint() uint64 {
	if r.s != "" && r.s[0] < 0x80 { // most values are small
		v := uint64(r.s[0])
		r.s = r.s[1:]
		return v
	}
	var v uint64
	for i := 0; i < len(r.s) && i < binary.MaxVarintLen64; i++ {
		c := r.s[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break // over 64 bits
			}
			r.s = r.s[i+1:]
			return v
		}
	}
	r.fail()
	return 0
}

func (r *Reader) Int() int64 {
	u := r.Uint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (r *Reader) Float() float64 { return math.Float64frombits(r.Uint()) }

func (r *Reader) Bool() bool {
	switch r.Uint() {
	case 0:
		return false
	case 1:
		return true
	}
	r.fail()
	return false
}

// Len reads a count of items that each take at least one byte, so it
// cannot exceed what is left.
func (r *Reader) Len() int {
	v := r.Uint()
	if v > uint64(len(r.s)) {
		r.fail()
		return 0
	}
	return int(v)
}

// NilLen reads what Writer.NilLen wrote: a count of items that each take
// at least one byte, or nil (ok false).
func (r *Reader) NilLen() (n int, ok bool) {
	v := r.Uint()
	if v == 0 {
		return 0, false
	}
	if v-1 > uint64(len(r.s)) {
		r.fail()
		return 0, false
	}
	return int(v - 1), true
}

func (r *Reader) Str() string {
	n := r.Len()
	s := r.s[:n]
	r.s = r.s[n:]
	return s
}

func (r *Reader) Fixed(dst []byte) {
	if len(r.s) < len(dst) {
		r.fail()
		return
	}
	copy(dst, r.s)
	r.s = r.s[len(dst):]
}

// Strs reads what Writer.Strs wrote.
func (r *Reader) Strs() []string {
	n, ok := r.NilLen()
	if !ok {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.Str()
	}
	return ss
}
