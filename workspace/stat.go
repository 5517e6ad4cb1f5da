package workspace

import (
	"io/fs"

	"github.com/cairn-run/cairn/hint"
)

// FileStat is what the digest memory compares: a file's stat, read
// without building an fs.FileInfo where the system allows (StatPath).
type FileStat struct {
	Size  int64
	MTime int64 // ns
	CTime int64 // ns; 0 where the system gives none
	Ino   uint64
	Mode  fs.FileMode
}

// StatOf reduces fi to a FileStat.
func StatOf(fi fs.FileInfo) FileStat {
	s := FileStat{Size: fi.Size(), MTime: fi.ModTime().UnixNano(), Mode: fi.Mode()}
	s.CTime, s.Ino = sysCtimeIno(fi.Sys())
	return s
}

// RacyAt reports whether an edit made at or after at could leave a file
// with the stat st (the racy rule, package hint).
func RacyAt(st FileStat, at int64) bool { return hint.Racy(st.MTime, st.CTime, at) }
