//go:build unix

package fsx

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// OpenFile is os.OpenFile for regular files and directories, without
// the five system calls (two fcntl pairs around an epoll_ctl that fails)
// os.OpenFile spends trying to register every file with Go's poller,
// which never accepts one. The file is left in blocking mode, which is
// what reads and writes of regular files are anyway. Opening a FIFO or
// a device this way would block a thread on its reads and writes: use
// os.OpenFile for those.
func OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	mode := uint32(perm.Perm())
	if perm&fs.ModeSetuid != 0 {
		mode |= unix.S_ISUID
	}
	if perm&fs.ModeSetgid != 0 {
		mode |= unix.S_ISGID
	}
	if perm&fs.ModeSticky != 0 {
		mode |= unix.S_ISVTX
	}
	var fd int
	var err error
	for {
		fd, err = unix.Open(name, flag|unix.O_CLOEXEC, mode)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	// NewFile of a blocking descriptor costs one fcntl(F_GETFL) and
	// leaves the poller alone.
	return os.NewFile(uintptr(fd), name), nil
}
