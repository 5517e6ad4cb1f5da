package cache

import (
	"io/fs"
	"syscall"
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

// fileID returns the device and inode numbers and the link count of a
// file: packs (pack.go) are indexed, and counted once, by them.
func fileID(fi fs.FileInfo) (dev, ino, nlink uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0, false
	}
	return uint64(st.Dev), st.Ino, uint64(st.Nlink), true
}
