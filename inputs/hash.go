package inputs

import (
	"fmt"
	"io/fs"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/internal/cores"
	"github.com/cairn-run/cairn/internal/hashmeter"
)

// smallFile is the size below which a file is read whole into a buffer
// and hashed here; larger ones go to cache.HashFileContext, which maps
// them.
const smallFile = 1 << 20

// lookupRange is the fewest files whose lookups are worth a goroutine:
// phases are decided side by side already, so a phase of a few files
// answers its own in place, and only long lists (a directory of a
// million files) are spread over the cores. A variable for tests.
var lookupRange = 1 << 14

// Digests fills digests and modes for phase's files, through the memory,
// hashing the files it does not know on all cores, metered. A file whose
// digest is there already (FilesDigested hashed it) is taken as it is.
func (f *Finder) Digests(phase string, files []File, digests []cache.Digest, modes []fs.FileMode) error {
	err := cores.Ranges(len(files), f.Workers, lookupRange, func(lo, hi int) error {
		mem := f.Mem.Cursor() // files are sorted by path, as the memory is
		for i := lo; i < hi; i++ {
			if digests[i] == (cache.Digest{}) {
				digests[i], _ = mem.Lookup(files[i].Rel, files[i].St)
			}
			modes[i] = files[i].St.Mode
		}
		return nil
	})
	if err != nil {
		return err
	}
	var todo []int
	var size int64
	for i := range files {
		if digests[i] == (cache.Digest{}) { // no content hashes to zero
			todo, size = append(todo, i), size+files[i].St.Size
		}
	}
	if len(todo) == 0 {
		return nil
	}
	m := hashmeter.Start(f.Report, phase, len(todo), size)
	defer m.Done()
	return f.hashTodo(m, files, todo, digests, modes)
}

// hashEach digests files[i] for every i in todo, by path, through the
// memory.
func (f *Finder) hashEach(m *hashmeter.Meter, files []File, todo []int, digests []cache.Digest, modes []fs.FileMode) error {
	return cores.Parallel(len(todo), f.Workers, func(j int) error {
		i := todo[j]
		file := files[i]
		ctx := m.Watch(f.Ctx(), file.St.Size)
		d, err := f.Mem.DigestOf(ctx, file.Rel, f.WS.Abs(file.Rel), file.St)
		if err != nil {
			return fmt.Errorf("hash input %s: %w", file.Rel, err)
		}
		digests[i], modes[i] = d, file.St.Mode
		m.Add(ctx, file.St.Size)
		return nil
	})
}
