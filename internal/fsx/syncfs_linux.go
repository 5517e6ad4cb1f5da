package fsx

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

type fsSyncer struct{ f *os.File }

func openFS(dir string) (FSSyncer, error) {
	if !syncfsReportsErrors() {
		return nil, fmt.Errorf("syncfs %s: %w (this kernel's syncfs does not report write-back errors)", dir, errors.ErrUnsupported)
	}
	f, err := OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	return fsSyncer{f}, nil
}

// syncfsReportsErrors says whether the running kernel is Linux 5.8 or
// later: before it, syncfs returns 0 even when a write-back failed, so
// a batch made durable by it could be acknowledged while lost.
func syncfsReportsErrors() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	return kernelAtLeast(u.Release[:], 5, 8)
}

// kernelAtLeast parses the "major.minor" start of a kernel release
// string (NUL-terminated, as uname gives it).
func kernelAtLeast(release []byte, major, minor int) bool {
	if i := bytes.IndexByte(release, 0); i >= 0 {
		release = release[:i]
	}
	parts := bytes.SplitN(release, []byte("."), 3)
	if len(parts) < 2 {
		return false
	}
	maj, err1 := strconv.Atoi(string(parts[0]))
	minStr := parts[1]
	if i := bytes.IndexFunc(minStr, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minStr = minStr[:i]
	}
	mnr, err2 := strconv.Atoi(string(minStr))
	if err1 != nil || err2 != nil {
		return false
	}
	return maj > major || maj == major && mnr >= minor
}

func (s fsSyncer) Sync() error {
	for {
		err := unix.Syncfs(int(s.f.Fd()))
		if err != unix.EINTR {
			if err != nil {
				return &os.PathError{Op: "syncfs", Path: s.f.Name(), Err: err}
			}
			return nil
		}
	}
}

func (s fsSyncer) Close() error { return s.f.Close() }
