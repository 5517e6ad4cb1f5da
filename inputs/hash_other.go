//go:build !linux

package inputs

import (
	"io/fs"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/internal/hashmeter"
)

// hashTodo is hashEach: the batched reading relative to an open directory
// uses Linux's system calls.
func (f *Finder) hashTodo(m *hashmeter.Meter, files []File, todo []int, digests []cache.Digest, modes []fs.FileMode) error {
	return f.hashEach(m, files, todo, digests, modes)
}
