package workspace

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/cairn-run/cairn/internal/fsx"
)

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
