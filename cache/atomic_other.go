//go:build !linux

package cache

import (
	"errors"
	"os"
)

// openNoFollow: elsewhere OpenObject relies on its regular-file check.
const openNoFollow = 0

// renameNoReplace is unavailable off Linux: a plain rename could replace an
// existing object, which the write-once rule forbids.
func renameNoReplace(src, dst string) (existed bool, err error) {
	return false, &os.LinkError{Op: "rename", Old: src, New: dst, Err: errors.ErrUnsupported}
}

// openNoFollowFile opens path read-only.
func openNoFollowFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|openNoFollow, 0)
}
