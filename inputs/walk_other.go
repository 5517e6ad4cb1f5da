//go:build !linux

package inputs

import "github.com/cairn-run/cairn/cache"

// walkTree is walkSerial: the parallel walk reads directories with
// Linux's system calls. There is no directory watch here: v's watch, if
// started, is never quiet, and no file is hashed as found.
func walkTree(abs, rel string, skip func(string) bool, _ int, files []File, _ *Watched, _ *coldHash) ([]File, []cache.Digest, error) {
	files, err := walkSerial(abs, rel, skip, files)
	return files, nil, err
}
