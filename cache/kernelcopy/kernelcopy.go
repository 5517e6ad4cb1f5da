// Package kernelcopy copies a file into another by the kernel, by reflink
// or copy_file_range, hashing what the copy holds as it goes. It is apart
// from cache because it knows nothing of the store's blobs, entries or
// digests: only two open files, the system calls between them, and what
// each pair of filesystems turned out to support.
package kernelcopy

import (
	"crypto/sha256"
	"io"
	"os"
	"sync"
)

// bufSize is the buffer for hashing: large enough that the number of
// reads per GiB stays small.
const bufSize = 1 << 20

var bufs = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// Raw blobs are restored by the kernel: a reflink (FICLONE) where the
// filesystem shares extents, else copy_file_range, which copies page to
// page without passing the bytes through user space. The content is
// hashed before the file gets its name. During copy_file_range the hash
// follows the copy one chunk behind, on a second goroutine, reading the
// destination back from the page cache: on two cores a restore takes
// about as long as hashing alone. After a reflink the source is hashed
// (see Verified).
const (
	// MinSize is the smallest raw blob copied by the kernel; below it one
	// read and one write in user space cost less than the extra syscalls
	// and the hashing goroutine.
	MinSize = 1 << 20
	// Chunk is what one copy_file_range call copies, and so how far the
	// hash trails the copy.
	Chunk = 8 << 20
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

// Verified copies the raw blob src into the empty file dst by reflink or
// copy_file_range and returns the SHA-256 of what dst then holds. It
// returns done false, having written nothing, when the kernel did neither
// (not supported between these filesystems, or copy_file_range failed
// before copying a byte); the caller then copies in user space. err is an
// I/O error.
func Verified(dst, src *os.File) (done bool, sum [sha256.Size]byte, err error) {
	type hashed struct {
		d   [sha256.Size]byte
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
		return true, sum, cerr
	case !copied:
		return false, sum, nil
	case cloned:
		// dst now shares src's extents but not its page cache: hash
		// src, which is usually cached, after the clone (the blob is
		// never written in place: for dst to be wrong, src would have
		// had to turn right since).
		done := make(chan int64)
		close(done)
		got, err := hashFollowing(src, done, true)
		return true, got, err
	case h.err != nil:
		return true, sum, h.err
	}
	return true, h.d, nil
}

// Copy copies src into the empty file dst by reflink, else by
// copy_file_range, without hashing it. copied is false, with dst left
// empty at offset 0, when the kernel did neither: the caller then copies
// in user space. err is an I/O error after part of the copy.
func Copy(dst, src *os.File) (copied bool, err error) {
	copied, _, err = kernelCopy(dst, src, nil)
	return copied, err
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
		n, err := copyRange(dst, src, &roff, &woff, Chunk)
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
func hashFollowing(f *os.File, marks <-chan int64, toEOF bool) ([sha256.Size]byte, error) {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
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
	var d [sha256.Size]byte
	if err != nil {
		return d, err
	}
	h.Sum(d[:0])
	return d, nil
}

// Hooks are the kernel calls a copy makes.
type Hooks struct {
	Clone func(dst, src *os.File) error
	Range func(dst, src *os.File, roff, woff *int64, n int) (int, error)
}

// SetHooks replaces the kernel calls (a nil one is kept) and forgets what
// the filesystems were found to support, so tests take every path on any
// filesystem; restore puts back the previous calls and forgets again.
func SetHooks(h Hooks) (restore func()) {
	oldClone, oldRange := cloneFile, copyRange
	resetCaps := func() {
		capsMu.Lock()
		caps = map[fsKey]copyCaps{}
		capsMu.Unlock()
	}
	if h.Clone != nil {
		cloneFile = h.Clone
	}
	if h.Range != nil {
		copyRange = h.Range
	}
	resetCaps()
	return func() {
		cloneFile, copyRange = oldClone, oldRange
		resetCaps()
	}
}
