package cache

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/cairn-run/cairn/cache/kernelcopy"
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
	return copyHashedContext(context.Background(), w, r)
}

// copyHashedContext is copyHashed that stops with ctx's error, checked
// before every buffer, once ctx is done.
func copyHashedContext(ctx context.Context, w io.Writer, r io.Reader) (Digest, int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	h := sha256.New()
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return Digest{}, n, err
		}
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

// mismatch is the bad result of a verification: nil if got is want.
func mismatch(got, want Digest) error {
	if got != want {
		return fmt.Errorf("content hashes to %s", got.Short())
	}
	return nil
}

// copyTrusted copies the raw blob src, whose content this workspace
// verified before and whose file has not changed since (EntryMemo), into
// the empty file dst without hashing it: by reflink, else
// copy_file_range, else in user space.
func copyTrusted(dst, src *os.File) error {
	if copied, err := kernelcopy.Copy(dst, src); copied || err != nil {
		return err
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, _, err := copyHashed(dst, src)
	return err
}
