package engine

import (
	"os"

	"golang.org/x/sys/unix"
)

// openCatFile opens path for catStage if it is a regular file that cat
// would open too: anything else is never opened, since opening a FIFO
// (even without blocking) lets a writer waiting on it go on, and a
// device's opening may do something. Nor is a file that the opening
// process decides, wherever the path leads: a symbolic link to
// /dev/stdin leads through a magic link (/proc/self/fd/0, refused by
// RESOLVE_NO_MAGICLINKS), one to /proc/self/status to a file of procfs,
// whose files describe their reader (refused by the file system's type).
// Without openat2 (Linux before 5.6), cat runs.
func openCatFile(path string) (*os.File, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, false
	}
	// Non-blocking still: should a FIFO replace the file meanwhile, its
	// opening would wait for a writer.
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK, Resolve: unix.RESOLVE_NO_MAGICLINKS}
	var fd int
	var err error
	for {
		fd, err = unix.Openat2(unix.AT_FDCWD, path, &how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, false
	}
	var fs unix.Statfs_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG ||
		unix.Fstatfs(fd, &fs) != nil || fs.Type == unix.PROC_SUPER_MAGIC {
		unix.Close(fd)
		return nil, false
	}
	return os.NewFile(uintptr(fd), path), true
}
