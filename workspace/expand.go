package workspace

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

	"github.com/cairn-run/cairn/internal/fsx"
)

// NotRegularError is an input path (rel) that is neither a regular file
// nor a directory (nor a symbolic link to one): a FIFO or a device, whose
// reading would block or never end.
// NotRegularError is Expand's error for a match that is neither a
// regular file nor a directory.
type NotRegularError struct {
	Rel  string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file or a directory", e.Rel, fsx.FileKind(e.Mode))
}

// NotRegularInput is the error for an input of phase addr (pattern, as
// declared) naming rel, which is not a regular file or a directory.
func NotRegularInput(addr, pattern, rel string, mode fs.FileMode) error {
	what := fmt.Sprintf("input %q", pattern)
	if rel != pattern {
		what = fmt.Sprintf("input %q matches %s, which", pattern, rel)
	}
	return fmt.Errorf("phase %s: %s is %s: an input must be a regular file, a directory or a symbolic link to one, whose content cairn hashes. Remove it from inputs or replace it with a regular file", addr, what, fsx.FileKind(mode))
}

// HasMeta reports whether an input is a glob pattern.
func HasMeta(p string) bool {
	// A loop, not strings.ContainsAny, which builds its set on every
	// call: a no-op run asks this of every input.
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*', '?', '[', '{':
			return true
		}
	}
	return false
}

// Expand calls found with the slash path and stat of each regular file
// (and symlink to a file, with the stat of its target) an input pattern
// names on disk: the file itself, every file below a directory, or every
// file a glob matches (directories matched by a glob are walked too).
// skip reports paths to leave out, with their subtrees. A pattern naming
// nothing finds nothing, without error. Every file found is stat'ed once,
// relative to its open directory when walking: that stat is what the
// digest and phase-key memories compare, so a no-op run needs no other.
func Expand(ws *Workspace, pattern string, skip func(rel string) bool, found func(rel string, st FileStat)) error {
	add := func(rel string) error {
		st, err := ws.StatRel(rel)
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
			found(rel, st)
			return nil
		}
		return walkDir(ws.Abs(rel), rel, skip, found)
	}
	if !HasMeta(pattern) {
		return add(pattern)
	}
	base, pat := doublestar.SplitPattern(pattern)
	matches, err := doublestar.Glob(os.DirFS(ws.Abs(base)), pat, doublestar.WithNoFollow())
	if err != nil {
		return err
	}
	for _, m := range matches {
		rel := m
		if base != "." {
			rel = path.Join(base, m)
		}
		if rel == StateDirName || strings.HasPrefix(rel, StateDirName+"/") {
			continue
		}
		if err := add(rel); err != nil {
			return err
		}
	}
	return nil
}

// walkDir calls found for every regular file below the directory abs
// (rel in the workspace), in lexical order, as filepath.WalkDir would
// visit them; symlinks to regular files count as files, with their
// target's stat, while links to directories are not followed, dangling
// ones are ignored, and FIFOs and devices (and links to them) are skipped.
// Each file is stat'ed relative to its open directory, so a tree of a
// million files costs a million short lookups, not a million walks of
// its path.
func walkDir(abs, rel string, skip func(string) bool, found func(string, FileStat)) error {
	dir, err := os.Open(abs)
	if err != nil {
		return err
	}
	defer dir.Close()
	ents, err := dir.ReadDir(-1)
	if err != nil {
		return err
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
			if err := walkDir(filepath.Join(abs, name), r, skip, found); err != nil {
				return err
			}
			continue
		}
		if !t.IsRegular() && t&fs.ModeSymlink == 0 {
			continue
		}
		st, err := statAt(dir, name, filepath.Join(abs, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // dangling symlink or vanished file
		}
		if err != nil {
			return err
		}
		if st.Mode.IsRegular() {
			found(r, st)
		}
	}
	return nil
}

// JoinRel maps an absolute path p found while walking the directory abs
// (named rel in the workspace) back to a workspace slash path.
func JoinRel(rel, abs, p string) string {
	if p == abs {
		return rel
	}
	return path.Join(rel, filepath.ToSlash(p[len(abs)+1:]))
}

// MatchesPattern reports whether the workspace path rel is named by an
// input pattern: equal, below it, or matched by the glob (or below a
// directory the glob matches).
func MatchesPattern(pattern, rel string) bool {
	if !HasMeta(pattern) {
		return IsAtOrBelow(rel, pattern)
	}
	for p := rel; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		if ok, _ := doublestar.Match(pattern, p); ok {
			return true
		}
	}
	return false
}

// IsAtOrBelow reports whether the slash path rel is dir or lies below it.
func IsAtOrBelow(rel, dir string) bool {
	return strings.HasPrefix(rel, dir) && (len(rel) == len(dir) || rel[len(dir)] == '/')
}
