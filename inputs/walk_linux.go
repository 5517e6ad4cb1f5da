package inputs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/workspace"
)

// walkTree appends to files what walkSerial would, in the same order, with
// directories read on up to workers goroutines: each reads a directory
// with getdents, sorts its names, stats its files relative to the open
// directory and hands its subdirectories to the others; the tree is put
// in order once every directory is read. Paths are built in chunks shared
// by many files, so a file costs its File and its path's bytes, no
// allocation of its own. With v, each directory is watched before it is
// read, and what the watch does not vouch for is noted in v. With h, the
// files of cold directories are hashed as they are found: digests then
// holds one per file of the walk (zero if not hashed), else it is nil.
func walkTree(abs, rel string, skip func(string) bool, workers int, files []File, v *Watched, h *coldHash) (_ []File, digests []cache.Digest, err error) {
	root := &dirNode{abs: abs, rel: rel, root: true}
	w := &walker{skip: skip, v: v, h: h, queue: []*dirNode{root}, pending: 1}
	w.cond = sync.NewCond(&w.mu)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.work()
		}()
	}
	wg.Wait()
	n0 := len(files)
	files, err = root.flatten(slices.Grow(files, int(w.total.Load())))
	if err == nil && w.hashed.Load() {
		digests = root.flattenDigests(make([]cache.Digest, 0, len(files)-n0))
	}
	return files, digests, err
}

// dirNode is one directory of a walk: its files in order, and where among
// them each subdirectory's files go.
type dirNode struct {
	abs, rel string
	root     bool // the walk's first directory
	files    []File
	digests  []cache.Digest // by file, if hashed as found (zero: not hashed)
	kids     []kid
	err      error // after files and kids: the walk stops there
}

type kid struct {
	at   int // the subdirectory's files go before files[at]
	node *dirNode
}

// flatten appends n's tree's files to files, in walkSerial's order, and
// returns the first error in that order.
func (n *dirNode) flatten(files []File) ([]File, error) {
	at := 0
	for _, k := range n.kids {
		files = append(files, n.files[at:k.at]...)
		at = k.at
		var err error
		if files, err = k.node.flatten(files); err != nil {
			return files, err
		}
	}
	return append(files, n.files[at:]...), n.err
}

// flattenDigests appends n's tree's files' digests to d, in flatten's
// order, zero for the files not hashed.
func (n *dirNode) flattenDigests(d []cache.Digest) []cache.Digest {
	at := 0
	own := func(to int) {
		if n.digests == nil {
			d = append(d, make([]cache.Digest, to-at)...)
		} else {
			d = append(d, n.digests[at:to]...)
		}
		at = to
	}
	for _, k := range n.kids {
		own(k.at)
		d = k.node.flattenDigests(d)
	}
	own(len(n.files))
	return d
}

// walker hands directories to read to its workers, last found first (the
// deepest, whose entries' inodes are likely near those just read).
type walker struct {
	skip   func(string) bool
	v      *Watched
	h      *coldHash
	hashed atomic.Bool  // a directory's files were hashed as found
	total  atomic.Int64 // files found
	dirs   atomic.Int64 // directories read

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []*dirNode
	pending int  // directories queued or being read
	failed  bool // a directory failed: read no more
}

func (w *walker) work() {
	var r dirReader
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && w.pending > 0 && !w.failed {
			w.cond.Wait()
		}
		if w.pending == 0 || w.failed {
			w.mu.Unlock()
			return
		}
		n := w.queue[len(w.queue)-1]
		w.queue = w.queue[:len(w.queue)-1]
		w.mu.Unlock()

		if r.read(n, w.skip, w.v, w.h) {
			w.hashed.Store(true)
		}
		files := w.total.Add(int64(len(n.files)))
		if dirs := w.dirs.Add(1); w.v != nil && dirs >= watchMinDirs && files < watchMinFiles*dirs {
			// A tree of small directories: watching them costs a no-op
			// run more than walking them again costs a run that edits.
			w.v.w.Close()
		}

		w.mu.Lock()
		for _, k := range n.kids {
			w.queue = append(w.queue, k.node)
		}
		w.pending += len(n.kids) - 1
		w.failed = w.failed || n.err != nil
		w.cond.Broadcast()
		w.mu.Unlock()
	}
}

// A watch costs a directory about what stat'ing a few files does, and
// saves a second walk only when the phase runs: a walk stops watching
// (its recheck walks again) once past watchMinDirs directories it has
// found fewer than watchMinFiles files a directory, so that a run where
// nothing changed is not made measurably slower.
const (
	watchMinDirs  = 64
	watchMinFiles = 100
)

// dirReader is a worker's buffers, kept from one directory to the next.
type dirReader struct {
	dirents []byte   // getdents' buffer
	names   []byte   // the directory's names, each followed by a NUL
	ents    []dirEnt // the directory's entries
	chunk   []byte   // where paths are built; the strings made of it are never changed
}

type dirEnt struct {
	off, n int32 // the name: names[off:off+n], a NUL after it
	typ    uint8 // DT_*
}

// read fills n's files and kids, as walkSerial would find them, the
// directory watched by v's watch, if any, before it is read; it reports
// whether it hashed n's files as it found them (h: see coldHash).
func (r *dirReader) read(n *dirNode, skip func(string) bool, v *Watched, h *coldHash) (hashed bool) {
	fd, err := openDir(n.abs)
	if err != nil {
		n.err = &fs.PathError{Op: "open", Path: n.abs, Err: err}
		return false
	}
	defer unix.Close(fd)
	wa := v.watch()
	if wa != nil {
		wa.DirFD(fd, n.abs)
		if n.root {
			// The directory opened, not the path stat'ed before: what
			// the path names later is compared with what was watched.
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				n.err = &fs.PathError{Op: "fstat", Path: n.abs, Err: err}
				return false
			}
			v.note(n.rel, workspace.StatOfUnix(&st))
		}
	}
	if err := r.readNames(fd); err != nil {
		n.err = &fs.PathError{Op: "readdirent", Path: n.abs, Err: err}
		return false
	}
	nfiles, nreg := 0, 0
	for _, e := range r.ents {
		if e.typ != unix.DT_DIR {
			nfiles++
		}
		if e.typ == unix.DT_REG {
			nreg++
		}
	}
	n.files = make([]File, 0, nfiles)
	var c *coldDir
	if h.cold(n.rel, nreg) {
		c = r.coldDir(h, nreg)
		n.digests = make([]cache.Digest, 0, nfiles)
		defer c.end()
	}
	for i := range r.ents {
		if !r.entry(n, fd, &r.ents[i], skip, v, c) {
			return c != nil
		}
	}
	return c != nil
}

// entry adds the directory entry e of n (open as fd) to n's files or
// kids, as walkSerial would, hashing it with c if c is not nil; false
// if n.err was set (the walk stops).
func (r *dirReader) entry(n *dirNode, fd int, e *dirEnt, skip func(string) bool, v *Watched, c *coldDir) bool {
	name := r.names[e.off : e.off+e.n]
	rel := r.path(n.rel, name)
	if skip(rel) {
		r.chunk = r.chunk[:len(r.chunk)-len(rel)] // nothing keeps it
		c.skip(e.typ)
		return true
	}
	typ := e.typ
	if typ == unix.DT_UNKNOWN {
		// As os.ReadDir does: the file system did not say.
		st, _, err := workspace.StatNameAt(fd, &r.names[e.off], unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.ENOENT {
			return true
		}
		if err != nil {
			n.err = &fs.PathError{Op: "lstat", Path: filepath.Join(n.abs, string(name)), Err: err}
			return false
		}
		typ = dtOf(st.Mode)
	}
	switch typ {
	case unix.DT_DIR:
		n.kids = append(n.kids, kid{at: len(n.files), node: &dirNode{abs: joinAbs(n.abs, name), rel: rel}})
		return true
	case unix.DT_REG, unix.DT_LNK:
	default:
		return true // FIFOs, devices, sockets
	}
	var (
		st    workspace.FileStat
		nlink uint64
		d     cache.Digest
		err   error
		found bool
	)
	if c != nil && e.typ == unix.DT_REG {
		st, nlink, d, found, err = c.file(fd, &r.names[e.off], rel)
		if err != nil {
			if pe, ok := err.(*fs.PathError); ok {
				pe.Path = filepath.Join(n.abs, string(name))
				err = fmt.Errorf("hash input %s: %w", rel, err)
			}
			n.err = err
			return false
		}
	}
	if !found {
		st, nlink, err = workspace.StatNameAt(fd, &r.names[e.off], 0)
		if err != nil && err != unix.ENOENT {
			n.err = &fs.PathError{Op: "stat", Path: filepath.Join(n.abs, string(name)), Err: err}
			return false
		}
	}
	wa := v.watch()
	if wa != nil && (typ == unix.DT_LNK || nlink > 1) && wa.File(joinAbs(n.abs, name), nlink, typ == unix.DT_LNK) {
		v.note(rel, st) // a dangling link's zero stat too: its target may appear
	}
	if err == unix.ENOENT {
		return true // dangling symlink or vanished file
	}
	if st.Mode.IsRegular() {
		n.files = append(n.files, File{Rel: rel, St: st})
		if n.digests != nil {
			n.digests = append(n.digests, d)
		}
	}
	return true
}

// readNames reads the open directory fd's entries, but "." and "..",
// sorted by name.
func (r *dirReader) readNames(fd int) error {
	if r.dirents == nil {
		r.dirents = make([]byte, 32<<10)
	}
	r.names, r.ents = r.names[:0], r.ents[:0]
	for {
		nb, err := unix.ReadDirent(fd, r.dirents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if nb <= 0 {
			break
		}
		// struct linux_dirent64: ino, off, reclen, type, name (NUL-ended).
		for b := r.dirents[:nb]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			ino, typ, name := binary.NativeEndian.Uint64(b), b[18], b[19:reclen]
			b = b[reclen:]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if ino == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			r.ents = append(r.ents, dirEnt{off: int32(len(r.names)), n: int32(len(name)), typ: typ})
			r.names = append(append(r.names, name...), 0)
		}
	}
	slices.SortFunc(r.ents, func(a, b dirEnt) int {
		return bytes.Compare(r.names[a.off:a.off+a.n], r.names[b.off:b.off+b.n])
	})
	return nil
}

// path returns dir's entry name as a workspace path, built in r.chunk.
func (r *dirReader) path(dir string, name []byte) string {
	n := len(name)
	if dir != "." {
		n += len(dir) + 1
	}
	if len(r.chunk)+n > cap(r.chunk) {
		r.chunk = make([]byte, 0, max(64<<10, n))
	}
	start := len(r.chunk)
	if dir != "." {
		r.chunk = append(append(r.chunk, dir...), '/')
	}
	r.chunk = append(r.chunk, name...)
	return unsafe.String(&r.chunk[start], n)
}

func joinAbs(dir string, name []byte) string {
	if len(dir) > 0 && dir[len(dir)-1] == os.PathSeparator {
		return dir + string(name)
	}
	return dir + "/" + string(name)
}

func openDir(abs string) (int, error) {
	for {
		fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// dtOf is the dirent type of a file of mode m.
func dtOf(m fs.FileMode) uint8 {
	switch {
	case m.IsDir():
		return unix.DT_DIR
	case m.IsRegular():
		return unix.DT_REG
	case m&fs.ModeSymlink != 0:
		return unix.DT_LNK
	}
	return unix.DT_UNKNOWN
}
