//go:build !linux

package inputs

import (
	"io/fs"

	"github.com/cairn-run/cairn/cache"
)

// hashTodo is hashEach: the batched reading relative to an open directory
// uses Linux's system calls.
func (f *Finder) hashTodo(files []File, todo []int, digests []cache.Digest, modes []fs.FileMode) error {
	return f.hashEach(f.Ctx(), files, todo, digests, modes)
}
