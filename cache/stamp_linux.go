package cache

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// stampOf is what the workspace memo compares of an object's file.
func stampOf(fi fs.FileInfo) (entryStamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return entryStamp{}, false
	}
	return entryStamp{
		size:  fi.Size(),
		mtime: fi.ModTime().UnixNano(),
		ctime: int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec),
		ino:   st.Ino,
	}, true
}

// FileID returns the device and inode numbers and the link count of a
// file: packs (pack.go) are indexed, and counted once, by them.
func FileID(fi fs.FileInfo) (dev, ino, nlink uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0, false
	}
	return uint64(st.Dev), st.Ino, uint64(st.Nlink), true
}

// entryStamp stats the entry file of key, rel ("xx/key") in the action
// cache directory, from an open descriptor of that directory: a no-op run
// stamps every phase's entry, and resolving the cache's whole path each
// time walked five more path components per phase than this.
func (c *Dir) entryStamp(rel, path string) (entryStamp, bool) {
	fd := c.acDirFD()
	if fd < 0 {
		fi, err := os.Lstat(path)
		if err != nil {
			return entryStamp{}, false
		}
		return stampOf(fi)
	}
	var st unix.Stat_t
	var err error
	for {
		if err = unix.Fstatat(fd, rel, &st, unix.AT_SYMLINK_NOFOLLOW); err != unix.EINTR {
			break
		}
	}
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return entryStamp{}, false
	}
	return entryStamp{
		size:  st.Size,
		mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec,
		ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
		ino:   st.Ino,
	}, true
}

// acDirFD is an O_PATH descriptor of the action cache directory, opened
// on first use and closed with the Dir (or when it is collected); -1 if
// it cannot be opened.
func (c *Dir) acDirFD() int {
	c.acFD.once.Do(func() {
		c.acFD.fd = -1
		fd, err := unix.Open(filepath.Join(c.root, ACDir), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		c.acFD.fd = fd
		c.acFD.cleanup = runtime.AddCleanup(c, func(fd int) { unix.Close(fd) }, fd)
	})
	return c.acFD.fd
}

// closeACDir closes the descriptor acDirFD opened, if any.
func (c *Dir) closeACDir() {
	c.acFD.once.Do(func() { c.acFD.fd = -1 })
	if c.acFD.fd >= 0 {
		c.acFD.cleanup.Stop()
		unix.Close(c.acFD.fd)
		c.acFD.fd = -1
	}
}
