package outputs

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/internal/cores"
	"github.com/cairn-run/cairn/memories"
)

// Matches reports whether the workspace holds exactly the part of a
// cached tree that belongs to output o.
func (k *Keeper) Matches(o string, part []cache.OutputFile) bool {
	return !k.Unmatched([]string{o}, Parts{o: part})[0]
}

// Unmatched tells, for each output outs[i], whether the workspace does not
// hold exactly its part of a cached tree (parts[outs[i]]): a file of
// another size, mode (executable or not) or content (by its digest, read
// again only when the memory does not know the file's stat), a symlink to
// elsewhere, a directory holding anything more, or anything missing. A
// no-op run asks this of every output file of every phase, so the files
// are checked on all cores, each stat'ed relative to its open parent
// directory, in the tree's order (the memory's, so that its lookups are a
// merge join).
func (k *Keeper) Unmatched(outs []string, parts Parts) []bool {
	res := make([]bool, len(outs))
	var jobs []matchJob
	for i, o := range outs {
		part := parts[o]
		if len(part) == 0 {
			res[i] = true
			continue
		}
		var kids map[string]int
		if part[0].Type == cache.TypeDir {
			kids = childCounts(part)
		}
		for j := range part {
			job := matchJob{out: i, f: &part[j], kids: -1}
			if kids != nil && part[j].Type == cache.TypeDir {
				job.kids = kids[part[j].Path]
			}
			jobs = append(jobs, job)
		}
	}
	if len(jobs) == 0 {
		return res
	}
	bad := make([]atomic.Bool, len(outs))
	ctx := k.ctx()
	chunks := (len(jobs) + matchChunk - 1) / matchChunk
	var next atomic.Int64
	work := func() {
		s := newDirStatter(k.WS.Root)
		// A phase of a few files (most phases) stats them by path:
		// opening their directories would cost more than it saves.
		s.direct = len(jobs) < directStats
		defer s.close()
		cur := k.Mem.Cursor()
		for {
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			for _, j := range jobs[c*matchChunk : min((c+1)*matchChunk, len(jobs))] {
				if !bad[j.out].Load() && !k.matchOne(ctx, s, cur, j) {
					bad[j.out].Store(true)
				}
			}
		}
	}
	if workers := min(cores.N, chunks); workers <= 1 {
		work()
	} else {
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work()
			}()
		}
		wg.Wait()
	}
	for i := range bad {
		res[i] = res[i] || bad[i].Load()
	}
	return res
}

// matchChunk is how many files a worker checks in a row: enough that
// handing out chunks costs nothing, few enough that both cores stay busy.
const matchChunk = 512

// matchJob is one path of a cached tree to compare with the workspace.
type matchJob struct {
	out  int // the output it belongs to, in Unmatched's outs
	f    *cache.OutputFile
	kids int // for a directory of a directory output, how many entries it must hold; else -1
}

// childCounts returns how many entries each directory of a directory
// output's part holds in the part.
func childCounts(part []cache.OutputFile) map[string]int {
	kids := map[string]int{}
	last, n := "", 0
	for _, f := range part[1:] {
		dir := path.Dir(f.Path)
		if dir != last {
			if n > 0 {
				kids[last] += n
			}
			last, n = dir, 0
		}
		n++
	}
	if n > 0 {
		kids[last] += n
	}
	return kids
}

// matchOne reports whether the workspace holds j's path as the cached
// tree has it.
func (k *Keeper) matchOne(ctx context.Context, s *dirStatter, cur *memories.Cursor, j matchJob) bool {
	f := j.f
	switch f.Type {
	case cache.TypeDir:
		st, err := s.lstat(f.Path)
		if err != nil || !st.Mode.IsDir() {
			return false
		}
		if j.kids >= 0 {
			// A directory output must hold nothing beyond the cached tree.
			n, err := s.entries(f.Path)
			return err == nil && n == j.kids
		}
		return true
	case cache.TypeSymlink:
		t, err := os.Readlink(k.WS.Abs(f.Path))
		return err == nil && filepath.ToSlash(t) == f.Target
	default:
		st, err := s.lstat(f.Path)
		if err != nil || !st.Mode.IsRegular() || st.Size != f.Size || uint32(st.Mode.Perm())&0o111 != f.Mode&0o111 {
			return false
		}
		d, ok := cur.Lookup(f.Path, st)
		if !ok {
			// A regular file's lstat is its stat: reuse it.
			if d, err = k.Mem.DigestOf(ctx, f.Path, k.WS.Abs(f.Path), st); err != nil {
				return false
			}
		}
		return d == f.Digest
	}
}

// splitRel splits a clean workspace path into its directory ("" for the
// workspace's own) and its name.
func splitRel(rel string) (dir, name string) {
	i := len(rel) - 1
	for i >= 0 && rel[i] != '/' {
		i--
	}
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}
