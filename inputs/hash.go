package inputs

import (
	"fmt"
	"slices"
	"sync"

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

// Digests gives put the digest of each of phase's files (i its index in
// files), through the memory, hashing the files it does not know on all
// cores, metered. put is called once a file, from several goroutines at
// once. known, if not nil, holds the digests found already (FilesDigested
// hashed those files; zero: not known), taken as they are.
func (f *Finder) Digests(phase string, files []File, known []cache.Digest, put func(i int, d cache.Digest)) error {
	type part struct {
		lo   int
		todo []int
		size int64
	}
	var (
		mu    sync.Mutex
		parts []part
	)
	err := cores.Ranges(len(files), f.Workers, lookupRange, func(lo, hi int) error {
		mem := f.Mem.Cursor() // files are sorted by path, as the memory is
		p := part{lo: lo}
		for i := lo; i < hi; i++ {
			var d cache.Digest
			if known != nil {
				d = known[i]
			}
			if d == (cache.Digest{}) { // no content hashes to zero
				var ok bool
				if d, ok = mem.Lookup(files[i].Rel, files[i].St); !ok {
					p.todo, p.size = append(p.todo, i), p.size+files[i].St.Size
					continue
				}
			}
			put(i, d)
		}
		if len(p.todo) > 0 {
			mu.Lock()
			parts = append(parts, p)
			mu.Unlock()
		}
		return nil
	})
	if err != nil || len(parts) == 0 {
		return err
	}
	slices.SortFunc(parts, func(a, b part) int { return a.lo - b.lo })
	todo, size := parts[0].todo, parts[0].size
	for _, p := range parts[1:] {
		todo, size = append(todo, p.todo...), size+p.size
	}
	m := hashmeter.Start(f.Report, phase, len(todo), size)
	defer m.Done()
	return f.hashTodo(m, files, todo, put)
}

// hashEach digests files[i] for every i in todo, by path, through the
// memory, for put.
func (f *Finder) hashEach(m *hashmeter.Meter, files []File, todo []int, put func(int, cache.Digest)) error {
	return cores.Parallel(len(todo), f.Workers, func(j int) error {
		i := todo[j]
		file := files[i]
		ctx := m.Watch(f.Ctx(), file.St.Size)
		d, err := f.Mem.DigestOf(ctx, file.Rel, f.WS.Abs(file.Rel), file.St)
		if err != nil {
			return fmt.Errorf("hash input %s: %w", file.Rel, err)
		}
		put(i, d)
		m.Add(ctx, file.St.Size)
		return nil
	})
}
