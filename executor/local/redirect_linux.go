package local

import (
	"errors"
	"os"

	"github.com/cairn-run/cairn/internal/fsx"
	"golang.org/x/sys/unix"
)

// openNoMagic opens path (close-on-exec) without going through a magic
// link such as /proc/self/fd/1 or /dev/stdout.
func openNoMagic(path string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &how)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// openRedirectFile opens the file of a redirection as sh would, unless
// the file is one the opening process decides (reached through a magic
// link, or on procfs): cairn would get its own where sh gives the
// phase's, so sh runs the line. selfPath catches such names as written;
// this catches a symbolic link to one. Without openat2 (Linux before
// 5.6) the file is opened as before, the names alone checked.
func openRedirectFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	fd, err := openNoMagic(name, flag, uint32(perm.Perm()))
	if err == unix.ENOSYS {
		return fsx.OpenFile(name, flag, perm)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil || fs.Type == unix.PROC_SUPER_MAGIC {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: name, Err: errors.New("a file of the opening process")}
	}
	return os.NewFile(uintptr(fd), name), nil
}
