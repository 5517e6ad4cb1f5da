//go:build !linux

package inputs

import (
	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/internal/hashmeter"
)

// hashTodo is hashEach: the batched reading relative to an open directory
// uses Linux's system calls.
func (f *Finder) hashTodo(m *hashmeter.Meter, files []File, todo []int, put func(int, cache.Digest)) error {
	return f.hashEach(m, files, todo, put)
}
