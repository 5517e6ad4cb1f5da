package cache

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openNoFollow makes OpenObject refuse symlinks (ELOOP) and not block on
// FIFOs.
const openNoFollow = unix.O_NOFOLLOW | unix.O_NONBLOCK

// renameNoReplace renames src to dst unless dst exists, for filesystems
// without hard links. existed reports that dst was already there (src is
// then left in place for the caller to remove).
func renameNoReplace(src, dst string) (existed bool, err error) {
	err = unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EEXIST) {
		return true, nil
	}
	if err != nil {
		return false, &os.LinkError{Op: "renameat2", Old: src, New: dst, Err: err}
	}
	return false, nil
}

// openNoFollowFile opens path read-only with openNoFollow, then puts the
// descriptor back in blocking mode: os.NewFile then leaves Go's poller
// alone (os.OpenFile would spend five system calls failing to register a
// regular file with it). OpenObject reads only regular files, which never
// block.
func openNoFollowFile(path string) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|openNoFollow|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, unix.O_RDONLY); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
