//go:build !linux

package kernelcopy

import (
	"errors"
	"os"
)

// Off Linux restores copy in user space: no FICLONE, no copy_file_range.

var cloneFile = func(dst, src *os.File) error { return errors.ErrUnsupported }

var copyRange = func(dst, src *os.File, roff, woff *int64, n int) (int, error) {
	return 0, errors.ErrUnsupported
}

func fsPair(dst, src *os.File) (fsKey, bool) { return fsKey{}, false }

func unsupportedCopy(err error) bool { return errors.Is(err, errors.ErrUnsupported) }
