package fsx

import (
	"errors"
	"fmt"
	"syscall"
)

// NoSpaceError is a write that failed because a filesystem is full
// (ENOSPC) or the user's quota is spent (EDQUOT). It says how much room
// is left where, so that the message tells the user what to free. ENOSPC
// is permanent: nothing retries it.
type NoSpaceError struct {
	Dir  string // a directory on the full filesystem
	Free int64  // bytes available to this user there; -1 if unknown
	Err  error
}

func (e *NoSpaceError) Error() string {
	free := "unknown space"
	if e.Free >= 0 {
		free = FormatBytes(e.Free)
	}
	return fmt.Sprintf("%v (%s free on the filesystem of %s)", e.Err, free, e.Dir)
}

// Unwrap returns the cause.
func (e *NoSpaceError) Unwrap() error { return e.Err }

// NoSpace returns err as a *NoSpaceError for the filesystem holding dir
// when it is ENOSPC or EDQUOT (and not one already), else err unchanged.
func NoSpace(err error, dir string) error {
	if err == nil || !(errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
		return err
	}
	var ns *NoSpaceError
	if errors.As(err, &ns) {
		return err
	}
	return &NoSpaceError{Dir: dir, Free: FreeSpace(dir), Err: err}
}

// FreeSpace returns the bytes available to this user on the filesystem
// holding dir, or -1 if it cannot tell.
func FreeSpace(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// FormatBytes renders a size in bytes with a binary unit and one decimal
// (37 B, 812.0 KiB, 1.5 MiB), as the cache commands and the free-space
// errors print it.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
