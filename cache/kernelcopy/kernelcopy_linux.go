package kernelcopy

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// cloneFile makes dst share src's extents (FICLONE: a reflink on btrfs,
// XFS, bcachefs, ...). A variable so tests can make it unsupported.
var cloneFile = func(dst, src *os.File) error {
	return unix.IoctlFileClone(int(dst.Fd()), int(src.Fd()))
}

// copyRange copies up to n bytes from src at *roff to dst at *woff in the
// kernel (copy_file_range), advancing both offsets. A variable so tests
// can make it unsupported or fail.
var copyRange = func(dst, src *os.File, roff, woff *int64, n int) (int, error) {
	for {
		m, err := unix.CopyFileRange(int(src.Fd()), roff, int(dst.Fd()), woff, n, 0)
		if err != unix.EINTR {
			return m, err
		}
	}
}

// fsPair identifies the source and destination filesystems of a copy.
func fsPair(dst, src *os.File) (fsKey, bool) {
	var a, b unix.Stat_t
	if unix.Fstat(int(src.Fd()), &a) != nil || unix.Fstat(int(dst.Fd()), &b) != nil {
		return fsKey{}, false
	}
	return fsKey{uint64(a.Dev), uint64(b.Dev)}, true
}

// unsupportedCopy reports whether err from FICLONE or copy_file_range
// means the filesystems (or the kernel) cannot do it, rather than an I/O
// error: the caller then falls back to a slower copy.
func unsupportedCopy(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTTY) ||
		errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) ||
		errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) ||
		errors.Is(err, unix.EBADF)
}
