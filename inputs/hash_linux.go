package inputs

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io/fs"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/internal/cores"
	"github.com/cairn-run/cairn/internal/fsx"
	"github.com/cairn-run/cairn/internal/hashmeter"
	"github.com/cairn-run/cairn/workspace"
)

// batchFiles is how many files of one directory a worker hashes with
// the directory open.
const batchFiles = 256

type smallHasher struct {
	buf  []byte
	name []byte
	sum  []byte // the digest, kept so Sum's argument need not escape each time
	sha  hash.Hash
}

var smallHashers = sync.Pool{New: func() any {
	return &smallHasher{buf: make([]byte, smallFile), sha: sha256.New()}
}}

// hashTodo digests files[i] for every i in todo (sorted by path) through
// the memory, for put, on all cores: the files of one directory a batch at a time,
// each opened relative to the open directory, stat'ed through its
// descriptor (which tells whether it kept the stat its expansion took)
// and read into a pooled buffer.
//
// The file is not stat'ed again once read: an edit while it is read, after
// the hashing started, gives it a ctime no earlier than the racy window
// of hashedAt, so the digest remembered under the stat taken before
// reading is never trusted for the edited file (it has another stat, or
// the remembered one is racy).
func (f *Finder) hashTodo(m *hashmeter.Meter, files []File, todo []int, put func(int, cache.Digest)) error {
	// Each large file is a batch of its own, first, so that files of
	// gigabytes side by side in one directory are hashed on all cores.
	var batches [][]int
	small := make([]int, 0, len(todo))
	for _, i := range todo {
		if files[i].St.Size >= smallFile {
			batches = append(batches, []int{i})
		} else {
			small = append(small, i)
		}
	}
	for start := 0; start < len(small); {
		dir := dirOf(files[small[start]].Rel)
		end := start + 1
		for end < len(small) && end-start < batchFiles && dirOf(files[small[end]].Rel) == dir {
			end++
		}
		batches = append(batches, small[start:end])
		start = end
	}
	ctx := f.Ctx()
	return cores.Parallel(len(batches), f.Workers, func(b int) error {
		batch := batches[b]
		if files[batch[0]].St.Size >= smallFile {
			largeHashing()
			return f.hashEach(m, files, batch, put)
		}
		dfd, err := openDir(f.WS.Abs(dirOf(files[batch[0]].Rel)))
		if err != nil {
			// Gone or unreadable: each file by its path says which.
			return f.hashEach(m, files, batch, put)
		}
		defer unix.Close(dfd)
		h := smallHashers.Get().(*smallHasher)
		defer smallHashers.Put(h)
		for _, i := range batch {
			file := files[i]
			if err := ctx.Err(); err != nil {
				return err
			}
			hashedAt := f.Mem.HashStart()
			d, n, unchanged, large, err := h.hashAt(ctx, dfd, file.Rel[strings.LastIndexByte(file.Rel, '/')+1:], file.St)
			if err != nil {
				abs := f.WS.Abs(file.Rel)
				if pe, ok := err.(*fs.PathError); ok {
					pe.Path = abs
				}
				return fmt.Errorf("hash input %s: hash %s: %w", file.Rel, abs, err)
			}
			if large {
				if err := f.hashEach(m, files, []int{i}, put); err != nil {
					return err
				}
				continue
			}
			f.Mem.NoteHashed(file.Rel, file.St, d, n, unchanged, hashedAt)
			put(i, d)
			m.Add(ctx, file.St.Size)
		}
		return nil
	})
}

// largeHashing is called as a worker starts on a large file (tests).
var largeHashing = func() {}

// dirOf is the directory part of the workspace path rel.
func dirOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return "."
}

// hashAt hashes the file name in the directory dfd, if it is a regular
// file smaller than smallFile (else large is true and nothing is read).
// unchanged reports whether it had the stat st when it was opened.
func (h *smallHasher) hashAt(ctx context.Context, dfd int, name string, st workspace.FileStat) (d cache.Digest, n int64, unchanged, large bool, err error) {
	h.name = append(append(h.name[:0], name...), 0)
	fd, err := openAt(dfd, &h.name[0])
	if err != nil {
		return d, 0, false, false, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	before, _, err := fstatLinks(fd)
	if err != nil {
		return d, 0, false, false, err
	}
	if !before.Mode.IsRegular() {
		return d, 0, false, false, fmt.Errorf("it is %s, not a regular file", fsx.FileKind(before.Mode))
	}
	if before.Size >= smallFile {
		return d, 0, false, true, nil
	}
	d, n, err = h.read(ctx, fd, name, before.Size)
	return d, n, before == st, false, err
}

// openAt opens the NUL-ended name in the directory dfd for reading,
// without blocking on a FIFO put in a file's place.
func openAt(dfd int, name *byte) (int, error) {
	for {
		r, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(dfd), uintptr(unsafe.Pointer(name)),
			unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0, 0, 0)
		if e == 0 {
			return int(r), nil
		}
		if e != unix.EINTR {
			return -1, e
		}
	}
}

// read hashes the open file fd (name), of size bytes when stat'ed.
func (h *smallHasher) read(ctx context.Context, fd int, name string, size int64) (d cache.Digest, n int64, err error) {
	h.sha.Reset()
	for {
		if err := ctx.Err(); err != nil {
			return d, n, err
		}
		m, err := unix.Read(fd, h.buf)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return d, n, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		h.sha.Write(h.buf[:m])
		n += int64(m)
		// All the bytes the stat promised, or the end: a file that
		// grew since has another stat, which the key's recheck and
		// the memory compare.
		if m == 0 || n >= size {
			break
		}
	}
	if testHookRead != nil {
		testHookRead(name[strings.LastIndexByte(name, '/')+1:])
	}
	h.sum = h.sha.Sum(h.sum[:0])
	copy(d[:], h.sum)
	return d, n, nil
}

// testHookRead, if set (by tests), is called with a file's name once it
// is read, before its digest is remembered.
var testHookRead func(name string)

// fstatLinks stats the open file fd, as workspace.StatPath would, and
// gives its number of links (which no key or fingerprint holds).
func fstatLinks(fd int) (workspace.FileStat, uint64, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstat(fd, &st)
		if err == nil {
			return workspace.StatOfUnix(&st), uint64(st.Nlink), nil
		}
		if err != unix.EINTR {
			return workspace.FileStat{}, 0, err
		}
	}
}

// coldDir is a cold directory's hashing as its reader finds its files
// (see coldHash).
type coldDir struct {
	h    *coldHash
	m    *hashmeter.Meter
	sh   *smallHasher
	left int // regular files counted in the meter's total, not yet hashed or taken out
}

// coldDir starts hashing a cold directory of nreg regular files.
func (r *dirReader) coldDir(h *coldHash, nreg int) *coldDir {
	c := &coldDir{h: h, m: h.meter(), sh: smallHashers.Get().(*smallHasher), left: nreg}
	c.m.Grow(nreg, 0)
	return c
}

// skip takes an entry of type typ the walk leaves out out of the count.
func (c *coldDir) skip(typ uint8) {
	if c != nil && typ == unix.DT_REG {
		c.uncount()
	}
}

func (c *coldDir) uncount() {
	c.left--
	c.m.Grow(-1, 0)
}

// end takes what was counted and not hashed (the walk stopped) out of
// the meter's total.
func (c *coldDir) end() {
	c.m.Grow(-c.left, 0)
	c.left = 0
	smallHashers.Put(c.sh)
	c.sh = nil
}

// file opens the regular file name of the directory dfd (rel in the
// workspace) and stats it through its descriptor; if it is a regular file
// smaller than smallFile, it is read and hashed, and its digest
// remembered and returned in d (else d is zero). found is false, with
// nothing done, if it could not be opened: the walk stats it by name and
// Digests says why it cannot be read.
func (c *coldDir) file(dfd int, name *byte, rel string) (st workspace.FileStat, nlink uint64, d cache.Digest, found bool, err error) {
	c.uncount() // counted again below if hashed
	if err := c.h.ctx.Err(); err != nil {
		return st, 0, d, false, err
	}
	hashedAt := c.h.f.Mem.HashStart()
	fd, err := openAt(dfd, name)
	if err != nil {
		return st, 0, d, false, nil
	}
	defer unix.Close(fd)
	st, nlink, err = fstatLinks(fd)
	if err != nil {
		return st, 0, d, false, &fs.PathError{Op: "fstat", Err: err}
	}
	if !st.Mode.IsRegular() || st.Size >= smallFile {
		return st, nlink, d, true, nil
	}
	c.m.Grow(1, st.Size)
	d, n, err := c.sh.read(c.h.ctx, fd, rel, st.Size)
	if err != nil {
		return st, 0, d, false, err
	}
	c.h.f.Mem.NoteHashed(rel, st, d, n, true, hashedAt)
	c.m.Add(c.h.ctx, st.Size)
	return st, nlink, d, true, nil
}
