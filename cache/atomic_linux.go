package cache

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openNoFollow makes openObject refuse symlinks (ELOOP) and not block on
// FIFOs.
const openNoFollow = unix.O_NOFOLLOW | unix.O_NONBLOCK

// renameNoReplace renames src to dst unless dst exists, for filesystems
// without hard links. existed reports that dst was already there (src is
// then left in place for the caller to remove).
func renameNoReplace(src, dst string) (existed bool, err error) {
	err = unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EEXIST) {
		return true, nil
	}
	if err != nil {
		return false, &os.LinkError{Op: "renameat2", Old: src, New: dst, Err: err}
	}
	return false, nil
}
