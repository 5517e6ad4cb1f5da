package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
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

// Expand returns the slash paths of the regular files (and
// symlinks to files) an input pattern names on disk: the file itself, every
// file below a directory, or every file a glob matches (directories matched
// by a glob are walked too). skip reports paths to leave out, with their
// subtrees. A pattern naming nothing gives no paths and no error. Where
// it had to stat a file anyway, it leaves the result in stats (if not nil)
// so the file is not stat'ed again for its digest: one stat per input.
func Expand(ws *Workspace, pattern string, skip func(rel string) bool, stats map[string]FileStat) ([]string, error) {
	var out []string
	add := func(rel string) error {
		st, err := ws.StatRel(rel)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // dangling symlink or vanished file
			}
			return err
		}
		if !st.Mode.IsDir() {
			if !st.Mode.IsRegular() && !skip(rel) {
				return &NotRegularError{Rel: rel, Mode: st.Mode}
			}
			if !skip(rel) {
				out = append(out, rel)
				if stats != nil {
					stats[rel] = st
				}
			}
			return nil
		}
		abs := ws.Abs(rel)
		return filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			r := JoinRel(rel, abs, p)
			if skip(r) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				st, err := os.Stat(p)
				if err != nil || !st.Mode().IsRegular() {
					// Links to directories are not followed, dangling
					// ones ignored, and those to FIFOs and devices
					// skipped as the FIFOs and devices themselves are.
					return nil
				}
				if stats != nil {
					stats[r] = StatOf(st)
				}
			} else if !d.Type().IsRegular() {
				return nil
			}
			out = append(out, r)
			return nil
		})
	}
	if !HasMeta(pattern) {
		if err := add(pattern); err != nil {
			return nil, err
		}
		return out, nil
	}
	base, pat := doublestar.SplitPattern(pattern)
	matches, err := doublestar.Glob(os.DirFS(ws.Abs(base)), pat, doublestar.WithNoFollow())
	if err != nil {
		return nil, err
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
			return nil, err
		}
	}
	return out, nil
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
