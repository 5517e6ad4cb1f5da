package inputs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/internal/fsx"
	"github.com/cairn-run/cairn/workspace"
)

// NotRegularError is expand's error for a match that is neither a regular
// file nor a directory (nor a symbolic link to one): a FIFO or a device,
// whose reading would block or never end.
type NotRegularError struct {
	Rel  string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file or a directory", e.Rel, fsx.FileKind(e.Mode))
}

// expand appends to files the path and stat of each regular file (and
// symlink to a file, with the stat of its target) an input pattern names
// on disk: the file itself, every file below a directory, or every file a
// glob matches (directories matched by a glob are walked too). skip
// reports paths to leave out, with their subtrees. A pattern naming
// nothing finds nothing, without error. Every file found is stat'ed once,
// relative to its open directory when walking: that stat is what the
// digest and phase-key memories compare, so a no-op run needs no other.
// Directories are walked under v's watch when v is not nil, and their
// files hashed as found by h when h is not nil.
func (f *Finder) expand(pattern string, skip func(rel string) bool, files []File, v *Watched, h *coldHash) ([]File, error) {
	add := func(rel string) error {
		st, err := f.WS.StatRel(rel)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // dangling symlink or vanished file
			}
			return err
		}
		if skip(rel) {
			return nil
		}
		if !st.Mode.IsDir() {
			if !st.Mode.IsRegular() {
				return &NotRegularError{Rel: rel, Mode: st.Mode}
			}
			files = append(files, File{Rel: rel, St: st})
			return nil
		}
		v.start()
		n0 := len(files)
		var digests []cache.Digest
		files, digests, err = walkTree(f.WS.Abs(rel), rel, skip, f.Workers, files, v, h)
		h.add(n0, digests)
		return err
	}
	if !workspace.HasMeta(pattern) {
		return files, add(pattern)
	}
	base, pat := doublestar.SplitPattern(pattern)
	matches, err := doublestar.Glob(os.DirFS(f.WS.Abs(base)), pat, doublestar.WithNoFollow())
	if err != nil {
		return files, err
	}
	for _, m := range matches {
		rel := m
		if base != "." {
			rel = path.Join(base, m)
		}
		if rel == workspace.StateDirName || strings.HasPrefix(rel, workspace.StateDirName+"/") {
			continue
		}
		if err := add(rel); err != nil {
			return files, err
		}
	}
	return files, nil
}

// walkSerial appends to files every regular file below the directory abs
// (rel in the workspace), in lexical order, as filepath.WalkDir would
// visit them; symlinks to regular files count as files, with their
// target's stat, while links to directories are not followed, dangling
// ones are ignored, and FIFOs and devices (and links to them) are skipped.
// Each file is stat'ed relative to its open directory, so a tree of a
// million files costs a million short lookups, not a million walks of
// its path. walkTree gives the same files, on several goroutines where
// the system allows.
func walkSerial(abs, rel string, skip func(string) bool, files []File) ([]File, error) {
	dir, err := os.Open(abs)
	if err != nil {
		return files, err
	}
	defer dir.Close()
	ents, err := dir.ReadDir(-1)
	if err != nil {
		return files, err
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, d := range ents {
		name := d.Name()
		r := name
		if rel != "." {
			r = rel + "/" + name
		}
		if skip(r) {
			continue
		}
		t := d.Type()
		if t.IsDir() {
			if files, err = walkSerial(filepath.Join(abs, name), r, skip, files); err != nil {
				return files, err
			}
			continue
		}
		if !t.IsRegular() && t&fs.ModeSymlink == 0 {
			continue
		}
		st, err := workspace.StatAt(dir, name, filepath.Join(abs, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // dangling symlink or vanished file
		}
		if err != nil {
			return files, err
		}
		if st.Mode.IsRegular() {
			files = append(files, File{Rel: r, St: st})
		}
	}
	return files, nil
}
