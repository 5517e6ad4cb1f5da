package inputs

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/internal/hashmeter"
)

// coldHash hashes, as a walk finds them, the small files of the
// directories the digest memory knows no file of (cold ones: a first run
// over a dataset), so that each is opened, stat'ed through its
// descriptor and read in one pass, not stat'ed by name first and opened
// later. The stat of the open file is the one the walk keeps: the
// fingerprint and the memory see what they would have. Large files, and
// directories of more than coldMaxFiles files (spread over the cores
// better by Digests, a batch at a time), are left to Digests.
type coldHash struct {
	f     *Finder
	phase string
	ctx   context.Context

	once sync.Once
	m    *hashmeter.Meter // started at the first cold directory with files

	mu      sync.Mutex
	digests []cache.Digest // by file found so far (zero: not hashed); nil while none was
}

// coldMaxFiles is the most files a directory may have for its files to
// be hashed by the worker that reads it.
const coldMaxFiles = 4096

// cold reports whether dir's files are to be hashed as they are found
// (a nil h hashes nothing).
func (h *coldHash) cold(dir string, nfiles int) bool {
	return h != nil && nfiles > 0 && nfiles <= coldMaxFiles && !h.f.Mem.KnowsUnder(dir)
}

// meter is the meter of the files hashed as found; its totals grow as
// cold directories are read.
func (h *coldHash) meter() *hashmeter.Meter {
	h.once.Do(func() { h.m = hashmeter.StartGrowing(h.f.Report, h.phase) })
	return h.m
}

// done ends the hashing's report, if any.
func (h *coldHash) done() {
	if h != nil {
		h.once.Do(func() {})
		h.m.Done()
	}
}

// add records the digests of a walk's files, appended to files after its
// first n0 (d: nil if none was hashed, else one per file).
func (h *coldHash) add(n0 int, d []cache.Digest) {
	if h == nil || d == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.digests == nil && n0 == 0 {
		h.digests = d // the first walk's, most often the only one
		return
	}
	h.digests = append(h.digests, make([]cache.Digest, n0-len(h.digests))...)
	h.digests = append(h.digests, d...)
}

// result returns the digests of files (nil if none was hashed), one per
// file, zero for those not hashed.
func (h *coldHash) result(n int) []cache.Digest {
	if h == nil || h.digests == nil {
		return nil
	}
	if len(h.digests) == n {
		return h.digests
	}
	return append(h.digests, make([]cache.Digest, n-len(h.digests))...)
}

// sortFiles sorts files by path, each once (the first found kept), and
// digests (nil, or one per file) along.
func sortFiles(files []File, digests []cache.Digest) ([]File, []cache.Digest) {
	cmpRel := func(a, b File) int { return strings.Compare(a.Rel, b.Rel) }
	if digests == nil {
		// A single directory's walk comes sorted and without
		// duplicates, unless a name sorts below its sibling
		// directory's files ("a.txt" before "a/x"): then, and for
		// several patterns, sort.
		if !slices.IsSortedFunc(files, cmpRel) {
			slices.SortStableFunc(files, cmpRel)
		}
		return slices.CompactFunc(files, func(a, b File) bool { return a.Rel == b.Rel }), nil
	}
	if !slices.IsSortedFunc(files, cmpRel) {
		idx := make([]int, len(files))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmpRel(files[a], files[b]) })
		sf, sd := make([]File, len(files)), make([]cache.Digest, len(files))
		for i, j := range idx {
			sf[i], sd[i] = files[j], digests[j]
		}
		files, digests = sf, sd
	}
	out := 0
	for i := range files {
		if out > 0 && files[i].Rel == files[out-1].Rel {
			continue
		}
		files[out], digests[out] = files[i], digests[i]
		out++
	}
	return files[:out], digests[:out]
}
