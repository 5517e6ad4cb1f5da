package cache

import (
	"crypto/sha256"
	"io"
	"sync"
)

// copyBufSize is the buffer for streaming hashes and copies. Large buffers
// keep the number of syscalls per GiB small; 1 MiB is past the point where
// bigger ones help.
const copyBufSize = 1 << 20

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// copyHashed copies r to w (w may be nil) until EOF and returns the SHA-256
// and length of what it read. It does not use io.Copy, whose ReaderFrom and
// WriterTo shortcuts bypass the hash or pick a 32 KiB buffer.
func copyHashed(w io.Writer, r io.Reader) (Digest, int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	h := sha256.New()
	var n int64
	for {
		m, rerr := r.Read(buf)
		if m > 0 {
			h.Write(buf[:m])
			n += int64(m)
			if w != nil {
				if _, err := w.Write(buf[:m]); err != nil {
					return Digest{}, n, err
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return Digest{}, n, rerr
		}
	}
	var d Digest
	h.Sum(d[:0])
	return d, n, nil
}
