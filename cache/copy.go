package cache

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
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

// Raw blobs are restored by the kernel: a reflink (FICLONE) where the
// filesystem shares extents, else copy_file_range, which copies page to
// page without passing the bytes through user space. The content is
// hashed before the file gets its name. During copy_file_range the hash
// follows the copy one chunk behind, on a second goroutine, reading the
// destination back from the page cache: on two cores a restore takes
// about as long as hashing alone. After a reflink the source is hashed
// (see copyVerifiedKernel).
const (
	// kernelCopyMin is the smallest raw blob copied by the kernel; below
	// it one read and one write in user space cost less than the extra
	// syscalls and the hashing goroutine.
	kernelCopyMin = 1 << 20
	// rangeChunk is what one copy_file_range call copies, and so how far
	// the hash trails the copy.
	rangeChunk = 8 << 20
)

// fsKey names a pair of filesystems: the source's device, the
// destination's.
type fsKey struct{ src, dst uint64 }

// copyCaps is what a pair of filesystems turned out not to support. A
// filesystem without reflinks (ext4) costs one failed ioctl per process,
// not one per file.
type copyCaps struct{ noClone, noRange bool }

var (
	capsMu sync.Mutex
	caps   = map[fsKey]copyCaps{}
)

func loadCaps(k fsKey) copyCaps {
	capsMu.Lock()
	defer capsMu.Unlock()
	return caps[k]
}

func storeCaps(k fsKey, c copyCaps) {
	capsMu.Lock()
	defer capsMu.Unlock()
	caps[k] = c
}

// copyVerifiedKernel copies the raw blob src into the empty file dst by
// reflink or copy_file_range and hashes what dst then holds. It returns
// done false, having written nothing, when the kernel did neither (not
// supported between these filesystems, or copy_file_range failed before
// copying a byte); the caller then copies in user space. As for
// readVerified, err is an I/O error and bad says the content is not d.
func copyVerifiedKernel(dst, src *os.File, d Digest) (done bool, bad, err error) {
	type hashed struct {
		d   Digest
		err error
	}
	// The hash follows a copy_file_range one chunk behind, reading dst
	// back from the page cache.
	marks := make(chan int64, 4)
	res := make(chan hashed, 1)
	go func() {
		d, err := hashFollowing(dst, marks, false)
		res <- hashed{d, err}
	}()
	copied, cloned, cerr := kernelCopy(dst, src, marks)
	close(marks)
	h := <-res
	switch {
	case cerr != nil:
		return true, nil, cerr
	case !copied:
		return false, nil, nil
	case cloned:
		// dst now shares src's extents but not its page cache: hash
		// src, which is usually cached, after the clone (the blob is
		// never written in place: for dst to be wrong, src would have
		// had to turn right since).
		done := make(chan int64)
		close(done)
		got, err := hashFollowing(src, done, true)
		if err != nil {
			return true, nil, err
		}
		return true, mismatch(got, d), nil
	case h.err != nil:
		return true, nil, h.err
	}
	return true, mismatch(h.d, d), nil
}

// kernelCopy copies src into the empty file dst by reflink, else by
// copy_file_range, sending dst's length after each chunk on marks (if not
// nil). copied is false, with dst left empty at offset 0, when the kernel
// did neither (not supported between these filesystems, remembered per
// pair; or copy_file_range failed before copying a byte): the caller then
// copies in user space, and meets a disk error again if it was one. err
// is an I/O error after part of the copy.
func kernelCopy(dst, src *os.File, marks chan<- int64) (copied, cloned bool, err error) {
	key, ok := fsPair(dst, src)
	if !ok {
		return false, false, nil
	}
	cp := loadCaps(key)
	if !cp.noClone {
		err := cloneFile(dst, src)
		switch {
		case err == nil:
			return true, true, nil
		case unsupportedCopy(err):
			cp.noClone = true
			storeCaps(key, cp)
		default:
			// Any other failure: copy instead, from a clean start (the
			// user-space copy writes at dst's offset).
			if err := dst.Truncate(0); err != nil {
				return true, false, err
			}
			if _, err := dst.Seek(0, io.SeekStart); err != nil {
				return true, false, err
			}
		}
	}
	if cp.noRange {
		return false, false, nil
	}
	var roff, woff int64
	for {
		n, err := copyRange(dst, src, &roff, &woff, rangeChunk)
		switch {
		case err != nil && woff == 0:
			if unsupportedCopy(err) {
				cp.noRange = true
				storeCaps(key, cp)
			}
			return false, false, nil
		case err != nil:
			return true, false, err
		case n == 0:
			return true, false, nil
		}
		if marks != nil {
			marks <- woff
		}
	}
}

// hashFollowing hashes f from offset 0 up to each offset received on
// marks, in order, reading with pread (f's own offset is not used); with
// toEOF it then goes on to the end of the file.
func hashFollowing(f *os.File, marks <-chan int64, toEOF bool) (Digest, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	h := sha256.New()
	var off int64
	var err error
	for end := range marks { // after an error, only drains marks
		for off < end && err == nil {
			var m int
			m, err = f.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
			h.Write(buf[:m])
			off += int64(m)
		}
	}
	for toEOF && err == nil {
		var m int
		m, err = f.ReadAt(buf, off)
		h.Write(buf[:m])
		off += int64(m)
		if err == io.EOF {
			err = nil
			break
		}
	}
	if err != nil {
		return Digest{}, err
	}
	var d Digest
	h.Sum(d[:0])
	return d, nil
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
	if copied, _, err := kernelCopy(dst, src, nil); copied || err != nil {
		return err
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, _, err := copyHashed(dst, src)
	return err
}
