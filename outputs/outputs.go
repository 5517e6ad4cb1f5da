package outputs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/cache/upkeep"
	"github.com/cairn-run/cairn/memories"
	"github.com/cairn-run/cairn/spec"
	"github.com/cairn-run/cairn/workspace"
)

// Keeper moves the outputs of the phases of one workspace in and out of
// one cache.
type Keeper struct {
	WS    *workspace.Workspace
	Cache *remote.Tiered
	// Mem holds the digests of the files hashed, so that an output
	// unchanged since is not read again.
	Mem *memories.Memory
	Now func() time.Time
	// Session returns the cache usage session whose waiting lines a
	// restore writes first; it may return nil.
	Session func() *upkeep.Session
	// Ctx returns what hashing and restoring stop on; nil means never.
	Ctx func() context.Context
	// BeforeRestore, if set, is called when Restore is about to read the
	// blobs of output o, after the session's lines are written.
	BeforeRestore func(o string)
}

func (k *Keeper) ctx() context.Context {
	if k.Ctx == nil {
		return context.Background()
	}
	return k.Ctx()
}

// MissingOutputsError says a phase exited 0 without producing declared
// outputs.
type MissingOutputsError struct {
	Phase string
	Paths []string
}

func (e *MissingOutputsError) Error() string {
	paths := quoteAll(e.Paths)
	if len(paths) > maxListedPaths {
		// Thousands of paths on one line help no one: the first few
		// show the pattern.
		paths = append(paths[:maxListedPaths:maxListedPaths], fmt.Sprintf("and %d more", len(e.Paths)-maxListedPaths))
	}
	return fmt.Sprintf("phase %s exited 0 but did not produce declared output %s", e.Phase, strings.Join(paths, ", "))
}

// maxListedPaths is how many paths an error lists before "and N more".
const maxListedPaths = 10

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

// Prepare removes a phase's stale declared outputs and creates
// their parent directories, as ninja and Bazel do before running an action.
// It works through an os.Root on the workspace, as Restore does: a
// parent that is a symlink leading outside the workspace fails the phase
// (see outsideParent) rather than have cairn delete or write there.
func (k *Keeper) Prepare(p *spec.Phase) error {
	root, err := os.OpenRoot(k.WS.Root)
	if err != nil {
		return fmt.Errorf("open workspace %s: %w", k.WS.Root, err)
	}
	defer root.Close()
	for _, o := range p.Outputs {
		name := filepath.FromSlash(o.Path)
		if err := root.RemoveAll(name); err != nil {
			return k.pathError("remove stale output", o.Path, err)
		}
		if dir := filepath.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return k.pathError("create directory for output", o.Path, err)
			}
		}
	}
	return nil
}

// pathError explains a failure to remove, create or restore output o
// (what says which): when a parent directory of o is a symlink leading
// outside the workspace, it says so and what to do.
func (k *Keeper) pathError(what, o string, err error) error {
	if link, target, ok := k.outsideParent(o); ok {
		return fmt.Errorf("%s %s: its parent %q is a symlink to %q, outside the workspace; cairn neither deletes nor writes through it: replace the symlink with a directory, or declare the output elsewhere", what, o, link, target)
	}
	return fmt.Errorf("%s %s: %w", what, o, err)
}

// outsideParent returns the first parent directory of output o (a
// workspace path) that is a symlink resolving outside the workspace, and
// its target.
func (k *Keeper) outsideParent(o string) (link, target string, ok bool) {
	root, err := filepath.EvalSymlinks(k.WS.Root)
	if err != nil {
		return "", "", false
	}
	var parts []string
	for d := path.Dir(o); d != "."; d = path.Dir(d) {
		parts = append(parts, d)
	}
	for i := len(parts) - 1; i >= 0; i-- {
		abs := k.WS.Abs(parts[i])
		fi, err := os.Lstat(abs)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		target, _ := os.Readlink(abs)
		res, err := filepath.EvalSymlinks(abs)
		if err != nil {
			// Dangling: judge the target as written.
			res = target
			if !filepath.IsAbs(res) {
				res = filepath.Join(filepath.Dir(abs), res)
			}
		}
		if rel, err := filepath.Rel(root, res); err != nil || !filepath.IsLocal(rel) && rel != "." {
			return parts[i], target, true
		}
	}
	return "", "", false
}

// Collect returns the tree of the declared outputs of a phase that
// just succeeded and, when its result is to be cached (caching), their content
// staged for the cache: small files inline, for the entry itself (see
// cache.InlineMax), the others as blobs the caller commits (after it may
// have let the phase's dependents start). Symlinks must point inside the
// workspace, followed through each other as the kernel would. beforeTemp
// is called before a staged output needs a temp file in the cache.
func (k *Keeper) Collect(p *spec.Phase, caching bool, beforeTemp func()) (*Collected, error) {
	var st *staging
	if caching {
		st = &staging{beforeTemp: beforeTemp}
	}
	tree, missing, err := k.walk(p, st)
	if err == nil && len(missing) > 0 {
		err = &MissingOutputsError{Phase: p.Addr, Paths: missing}
	}
	if err == nil {
		// Each symlink was checked on its own (storeEntry); a chain of
		// them can still lead outside, which restore would refuse.
		if lerr := cache.CheckLinks(tree); lerr != nil {
			err = fmt.Errorf("phase %s: %w; cairn refuses to cache it: make the link point inside the workspace", p.Addr, lerr)
		}
	}
	if err != nil {
		if st != nil {
			discardAll(st.pend)
		}
		return nil, err
	}
	c := &Collected{Tree: tree}
	if st != nil {
		c.Pend, c.Inline = st.pend, st.inline
	}
	return c, nil
}

// Collected is a succeeded phase's output tree and its content for the
// cache.
type Collected struct {
	Tree   []cache.OutputFile
	Pend   []*cache.PendingBlob // blobs to commit to cas/
	Inline InlineBlobs          // blobs to store in the entry
}

// InlineBlobs gathers the blobs an entry stores inline, each once, up to
// cache.InlineTotalMax bytes in all.
type InlineBlobs struct {
	Blobs []cache.InlineBlob
	bytes int
}

// Add takes data (whose digest is d) inline if it is small enough and
// fits in what is left, and reports whether the entry now holds d.
func (in *InlineBlobs) Add(d cache.Digest, data []byte) bool {
	for _, b := range in.Blobs {
		if b.Digest == d {
			return true
		}
	}
	if len(data) > cache.InlineMax || in.bytes+len(data) > cache.InlineTotalMax {
		return false
	}
	if data == nil {
		data = []byte{} // "" in JSON, not null
	}
	in.Blobs = append(in.Blobs, cache.InlineBlob{Digest: d, Data: data})
	in.bytes += len(data)
	return true
}

// CommitAll makes staged blobs durable, and drops the rest after a
// failure.
func CommitAll(pend []*cache.PendingBlob) error { return cache.CommitAll(pend) }

func discardAll(pend []*cache.PendingBlob) {
	for _, b := range pend {
		b.Discard()
	}
}

// InWorkspace returns the tree of p's outputs as the workspace holds
// them, storing nothing, and the declared outputs that are absent.
func (k *Keeper) InWorkspace(p *spec.Phase) ([]cache.OutputFile, []string, error) {
	return k.walk(p, nil)
}

// staging collects the outputs staged for the cache.
type staging struct {
	pend       []*cache.PendingBlob
	inline     InlineBlobs
	beforeTemp func()
}

// walk builds the tree of p's declared outputs, staging every file
// for the cache when store is not nil and only hashing it otherwise.
func (k *Keeper) walk(p *spec.Phase, store *staging) ([]cache.OutputFile, []string, error) {
	var missing []string
	var tree []cache.OutputFile
	outer := store
	for _, o := range p.Outputs {
		// A temporary output is hashed (its digests enter the keys of the
		// phases reading it) but not stored.
		temp := p.IsTemporary(o.Path)
		store := outer
		if temp {
			store = nil
		}
		abs := k.WS.Abs(o.Path)
		fi, err := os.Lstat(abs)
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, o.Path)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("phase %s: output %s: %w", p.Addr, o.Path, err)
		}
		if !fi.IsDir() {
			f, err := k.storeEntry(p, o.Path, abs, fi, store)
			if err != nil {
				return nil, nil, err
			}
			f.Temporary = temp
			tree = append(tree, f)
			continue
		}
		err = filepath.WalkDir(abs, func(pth string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			f, err := k.storeEntry(p, workspace.JoinRel(o.Path, abs, pth), pth, fi, store)
			if err != nil {
				return err
			}
			f.Temporary = temp
			tree = append(tree, f)
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("phase %s: output %s: %w", p.Addr, o.Path, err)
		}
	}
	sort.Slice(tree, func(i, j int) bool { return tree[i].Path < tree[j].Path })
	return tree, missing, nil
}

// storeEntry describes one file, directory or symlink of an output tree,
// staging a file's content when store is not nil.
func (k *Keeper) storeEntry(p *spec.Phase, rel, abs string, fi fs.FileInfo, store *staging) (cache.OutputFile, error) {
	mode := uint32(fi.Mode().Perm())
	switch {
	case fi.IsDir():
		return cache.OutputFile{Path: rel, Type: "dir", Mode: mode}, nil
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(abs)
		if err != nil {
			return cache.OutputFile{}, err
		}
		resolved := path.Join(path.Dir(rel), filepath.ToSlash(target))
		if filepath.IsAbs(target) || !filepath.IsLocal(filepath.FromSlash(resolved)) {
			return cache.OutputFile{}, fmt.Errorf("phase %s: output %s is a symlink to %q, outside the workspace; cairn refuses to cache it", p.Addr, rel, target)
		}
		return cache.OutputFile{Path: rel, Type: "symlink", Mode: 0o777, Target: filepath.ToSlash(target)}, nil
	case fi.Mode().IsRegular():
		st := workspace.StatOf(fi)
		hashedAt := k.Now()
		var d cache.Digest
		var size int64
		var err error
		if store != nil {
			var b *cache.PendingBlob
			if b, err = k.Cache.StageFile(abs, store.beforeTemp); err == nil {
				d, size = b.Digest, b.Size
				if data, ok := b.Inline(); ok && store.inline.Add(d, data) {
					b.Discard()
				} else {
					store.pend = append(store.pend, b)
				}
			}
		} else {
			var dfi fs.FileInfo
			d, dfi, err = k.Mem.Digest(rel, abs)
			if err == nil {
				size = dfi.Size()
			}
		}
		if err != nil {
			return cache.OutputFile{}, fmt.Errorf("store output %s: %w", rel, err)
		}
		if fi2, err := os.Lstat(abs); err == nil && workspace.StatOf(fi2) == st {
			k.Mem.Record(rel, st, d, hashedAt)
		}
		// The mtime goes with the file (a restore gives it back), never
		// into a key: that is built from digests and modes only.
		return cache.OutputFile{Path: rel, Type: "file", Mode: mode, Digest: d, Size: size, MTime: st.MTime}, nil
	default:
		return cache.OutputFile{}, fmt.Errorf("phase %s: output %s is a %s; only files, directories and symlinks can be outputs", p.Addr, rel, fi.Mode().Type())
	}
}

// Restore replaces the workspace copy of output o with the cached
// tree part, verifying every blob as it is written. Everything goes
// through an os.Root on the workspace, so a symlink in the workspace (one
// there before, or one swapped in while restoring) that leads outside it
// makes the restore fail rather than write or delete outside.
//
// It first writes the session's waiting lines: a GC must see the hit of
// the entry before the restore reads its blobs (cache/FORMAT.md, "Usage
// sessions"), whichever path (a run, --only's outside phases) restores.
func (k *Keeper) Restore(o string, part []cache.OutputFile, inline []cache.InlineBlob) error {
	if k.Session != nil {
		k.Session().Flush()
	}
	if k.BeforeRestore != nil {
		k.BeforeRestore(o)
	}
	root, err := os.OpenRoot(k.WS.Root)
	if err != nil {
		return fmt.Errorf("restore %s: %w", o, err)
	}
	defer root.Close()
	if err := root.RemoveAll(filepath.FromSlash(o)); err != nil {
		return k.pathError("restore", o, err)
	}
	if err := k.Cache.RestoreTree(k.ctx(), root, part, inline); err != nil {
		return k.pathError("restore", o, err)
	}
	return nil
}

// TreeProblem says what is wrong with entry's output tree, or returns "":
// every path must lie inside an output its key declares, and every
// declared output must be there. cairn never stores anything else; a
// planted entry could, to make a restore write elsewhere in the workspace
// (.git/hooks, the spec) or delete an output and put nothing back, so such
// an entry is refused whole.
func TreeProblem(entry *cache.Entry) string {
	_, problem := Split(entry)
	return problem
}

// Parts is an entry's output tree split by declared output.
type Parts map[string][]cache.OutputFile

// Split splits entry's output tree by the outputs its key declares
// (SplitTree) and says what is wrong with it, as TreeProblem does.
func Split(entry *cache.Entry) (Parts, string) {
	return SplitTree(entry.Outputs, Declared(entry))
}

// SplitTree splits an output tree by the declared outputs, and says what
// is wrong with it, as TreeProblem does: the first path outside them, or
// the first declared output it lacks (whose part is then nil). A path
// belongs to each declared output that is the path itself or one of its
// parent directories; looking those up instead of comparing every path
// with every output keeps a phase of many declared outputs linear. A part
// that is one run of the tree (as it is in a sorted tree unless a sibling
// such as "out.txt" sorts between "out" and "out/...") shares the tree's
// array rather than copying it.
func SplitTree(tree []cache.OutputFile, declared []string) (Parts, string) {
	type span struct{ first, last, n int }
	spans := make([]span, len(declared))
	index := make(map[string]int, len(declared))
	for i, o := range declared {
		spans[i].first = -1
		if _, dup := index[o]; !dup {
			index[o] = i
		}
	}
	problem := ""
	for i, f := range tree {
		inside := false
		for p := f.Path; ; {
			if x, ok := index[p]; ok {
				s := &spans[x]
				inside = true
				if s.first < 0 {
					s.first = i
				}
				s.last = i
				s.n++
			}
			j := strings.LastIndexByte(p, '/')
			if j < 0 {
				break
			}
			p = p[:j]
		}
		if !inside && problem == "" {
			problem = fmt.Sprintf("lists %q, outside the phase's declared outputs", f.Path)
		}
	}
	parts := make(Parts, len(declared))
	scattered := map[string]bool{}
	for _, o := range declared {
		s := &spans[index[o]]
		switch {
		case s.n == 0:
			if problem == "" {
				problem = fmt.Sprintf("lacks the declared output %q", o)
			}
		case s.last-s.first+1 == s.n:
			parts[o] = tree[s.first : s.last+1 : s.last+1]
		default:
			scattered[o] = true
		}
	}
	if len(scattered) > 0 {
		for _, f := range tree {
			for p := f.Path; ; {
				if scattered[p] {
					parts[p] = append(parts[p], f)
				}
				j := strings.LastIndexByte(p, '/')
				if j < 0 {
					break
				}
				p = p[:j]
			}
		}
	}
	return parts, problem
}

// Declared returns the outputs entry's key declares.
func Declared(entry *cache.Entry) []string {
	var out []string
	for _, c := range entry.Components {
		if c.Kind == cache.KindOutput {
			out = append(out, c.Value)
		}
	}
	if !slices.IsSorted(out) { // they mostly are: sorted by name, the path
		slices.Sort(out)
	}
	return out
}

// Remove removes p's declared outputs that exist and returns them.
// Everything goes through an os.Root on the workspace: an output reached
// through a symlink that leads outside (a directory linked to a scratch
// disk) is left where it is and named in the error, as is one that cannot
// be removed.
func (k *Keeper) Remove(p *spec.Phase) ([]string, error) {
	if len(p.Outputs) == 0 {
		return nil, nil
	}
	root, err := os.OpenRoot(k.WS.Root)
	if err != nil {
		return nil, fmt.Errorf("remove partial outputs: %w", err)
	}
	defer root.Close()
	var removed []string
	var errs []error
	for _, o := range p.Outputs {
		name := filepath.FromSlash(o.Path)
		if _, err := root.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			errs = append(errs, fmt.Errorf("left partial output %s: %w", o.Path, err))
			continue
		}
		if err := root.RemoveAll(name); err != nil {
			errs = append(errs, fmt.Errorf("left partial output %s: %w", o.Path, err))
			continue
		}
		removed = append(removed, o.Path)
	}
	return removed, errors.Join(errs...)
}

// Temporary reports whether part, an output's tree in an entry, is a
// temporary output's: recorded, not stored.
func Temporary(part []cache.OutputFile) bool {
	return len(part) > 0 && part[0].Temporary
}
