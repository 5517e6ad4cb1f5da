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
