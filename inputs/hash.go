package inputs

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/internal/cores"
)

// Digests fills digests and modes for files, through the memory, hashing
// the files it does not know on all cores.
func (f *Finder) Digests(files []File, digests []cache.Digest, modes []fs.FileMode) error {
	// Files the memory knows cost a lookup: answer them here, and only
	// spread the ones to read over the cores (phases are decided side by
	// side already, so goroutines for lookups are pure overhead).
	todo := make([]int, 0, len(files))
	for i, file := range files {
		if d, ok := f.Mem.Lookup(file.Rel, file.St); ok {
			digests[i], modes[i] = d, file.St.Mode
			continue
		}
		todo = append(todo, i)
	}
	return f.hashTodo(files, todo, digests, modes)
}

// hashEach digests files[i] for every i in todo, by path, through the
// memory.
func (f *Finder) hashEach(ctx context.Context, files []File, todo []int, digests []cache.Digest, modes []fs.FileMode) error {
	return cores.Parallel(len(todo), f.Workers, func(j int) error {
		i := todo[j]
		file := files[i]
		d, err := f.Mem.DigestOf(ctx, file.Rel, f.WS.Abs(file.Rel), file.St)
		if err != nil {
			return fmt.Errorf("hash input %s: %w", file.Rel, err)
		}
		digests[i], modes[i] = d, file.St.Mode
		return nil
	})
}
