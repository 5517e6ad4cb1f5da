package outputs

import (
	"encoding/binary"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/cairn-run/cairn/workspace"
)

// dirStatter stats the paths of a cached tree relative to their parent
// directory, kept open while the paths that follow are in it: the kernel
// then resolves one name per file, and no path is built. It is for one
// goroutine.
type dirStatter struct {
	direct  bool // lstat by path, no directory opened
	root    string
	rootFD  int // -1 until opened; -2 if it cannot be
	dir     string
	dirFD   int // the open dir; -1 if none
	dirErr  error
	name    []byte // the name stat'ed, NUL-ended
	dirents []byte
}

// directStats is how many files a no-op stats by path rather than
// through their open directories.
const directStats = 64

func newDirStatter(root string) *dirStatter {
	return &dirStatter{root: root, rootFD: -1, dirFD: -1}
}

func (s *dirStatter) close() {
	if s.dirFD >= 0 {
		unix.Close(s.dirFD)
	}
	if s.rootFD >= 0 {
		unix.Close(s.rootFD)
	}
}

// open returns a descriptor of workspace directory dir ("" for the
// workspace), which the statter closes.
func (s *dirStatter) open(dir string) (int, error) {
	if s.rootFD == -1 {
		s.rootFD = -2
		if fd, err := openDirAt(unix.AT_FDCWD, s.root); err == nil {
			s.rootFD = fd
		}
	}
	if s.rootFD < 0 {
		return -1, &fs.PathError{Op: "open", Path: s.root, Err: unix.EBADF}
	}
	if dir == "" {
		return s.rootFD, nil
	}
	if s.dirFD >= 0 && dir == s.dir {
		return s.dirFD, nil
	}
	if s.dirFD < 0 && s.dirErr != nil && dir == s.dir {
		return -1, s.dirErr
	}
	if s.dirFD >= 0 {
		unix.Close(s.dirFD)
	}
	s.dir, s.dirFD, s.dirErr = dir, -1, nil
	if !filepath.IsLocal(dir) {
		s.dirErr = &fs.PathError{Op: "open", Path: dir, Err: fs.ErrInvalid}
		return -1, s.dirErr
	}
	fd, err := openDirAt(s.rootFD, dir)
	if err != nil {
		s.dirErr = &fs.PathError{Op: "open", Path: dir, Err: err}
		return -1, s.dirErr
	}
	s.dirFD = fd
	return fd, nil
}

// lstat stats workspace path rel without following a final symlink, as
// workspace.LstatPath does its absolute path.
func (s *dirStatter) lstat(rel string) (workspace.FileStat, error) {
	dir, name := splitRel(rel)
	if name == "" || name == "." || name == ".." {
		return workspace.FileStat{}, &fs.PathError{Op: "lstat", Path: rel, Err: fs.ErrInvalid}
	}
	if s.direct {
		return workspace.LstatPath(filepath.Join(s.root, filepath.FromSlash(rel)))
	}
	fd, err := s.open(dir)
	if err != nil {
		return workspace.FileStat{}, err
	}
	s.name = append(append(s.name[:0], name...), 0)
	st, _, err := workspace.StatNameAt(fd, &s.name[0], unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return workspace.FileStat{}, &fs.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return st, nil
}

// entries returns how many entries workspace directory rel holds, "."
// and ".." aside.
func (s *dirStatter) entries(rel string) (int, error) {
	pfd, err := s.open(rel)
	if err != nil {
		return 0, err
	}
	// A descriptor of its own: reading moves the offset, and the statter
	// may have rel open for the stats that follow.
	fd, err := openDirAt(pfd, ".")
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	if s.dirents == nil {
		s.dirents = make([]byte, 32<<10)
	}
	n := 0
	for {
		nb, err := unix.ReadDirent(fd, s.dirents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if nb <= 0 {
			return n, nil
		}
		// struct linux_dirent64: ino, off, reclen, type, name (NUL-ended).
		for b := s.dirents[:nb]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			ino, name := binary.NativeEndian.Uint64(b), b[19:reclen]
			b = b[reclen:]
			if ino == 0 || isDot(name) {
				continue
			}
			n++
		}
	}
}

// isDot reports whether a dirent's NUL-ended name is "." or "..".
func isDot(name []byte) bool {
	switch {
	case len(name) < 2 || name[0] != '.':
		return false
	case name[1] == 0:
		return true
	default:
		return len(name) >= 3 && name[1] == '.' && name[2] == 0
	}
}

func openDirAt(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
