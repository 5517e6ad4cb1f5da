package phasefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Log is one of a phase's log files (stdout or stderr) under
// .cairn/runs/<run>/logs. Most phases write nothing to one or both, and on
// a filesystem where making an inode is the dear part of a phase (ext4
// without a journal scans the recently deleted ones), two new files per
// phase cost more than the rest of cairn's work. So the log starts as a
// hard link to the run's one empty log file, and gets a file of its own at
// the first byte written. Readers always find the path: empty, then with
// the output so far.
//
// A Log is written by one goroutine at a time (the copy from the
// command's pipe) and closed once that copy is over.
type Log struct {
	path string
	f    *os.File
	n    int64 // bytes written
	err  error // first error, returned by every later Write
}

// EmptyLogs hands out the run's shared empty log file, made once.
type EmptyLogs struct {
	once sync.Once
	path string // "" when it could not be made
}

func (e *EmptyLogs) Get(dir string) string {
	e.once.Do(func() {
		p := filepath.Join(dir, ".empty")
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return
		}
		if f.Close() == nil {
			e.path = p
		}
	})
	return e.path
}

// OpenLog makes path an empty log: a link to empty when it can,
// else a file of its own. A file already at path (an earlier attempt's
// log that could not be moved aside) is replaced.
func OpenLog(path, empty string) (*Log, error) {
	l := &Log{path: path}
	if empty != "" {
		err := os.Link(empty, path)
		if errors.Is(err, fs.ErrExist) {
			_ = os.Remove(path)
			err = os.Link(empty, path)
		}
		if err == nil {
			return l, nil
		}
		// No hard links here (some network and FUSE filesystems): make
		// the file at once.
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	l.f = f
	return l, nil
}

// Write appends to the log, first giving it a file of its own: made under
// a temporary name and renamed over the link, so a reader never finds the
// path missing.
func (l *Log) Write(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.f == nil {
		if len(p) == 0 {
			return 0, nil
		}
		tmp := l.path + ".new"
		f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err == nil {
			if err = os.Rename(tmp, l.path); err != nil {
				f.Close()
				_ = os.Remove(tmp)
			}
		}
		if err != nil {
			l.err = err
			return 0, err
		}
		l.f = f
	}
	n, err := l.f.Write(p)
	l.n += int64(n)
	if err != nil {
		l.err = err
	}
	return n, err
}

// Empty reports whether nothing was written to the log.
func (l *Log) Empty() bool { return l.n == 0 }

// Close closes the log's file, if it has one.
func (l *Log) Close() error {
	var err error
	if l.f != nil {
		err = l.f.Close()
		l.f = nil
	}
	if l.err == nil {
		l.err = os.ErrClosed
	}
	return err
}
