// Package outpath holds the rules every path of a stored output tree
// follows, as restore needs them: clean, relative, slash-separated and
// inside the workspace; symlink targets that stay inside it when resolved
// through the tree's other links as the kernel would; and the folding
// under which a case-insensitive, normalizing filesystem sees two names
// as one. Pure string functions: nothing here touches a file.
package outpath

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxLinkHops bounds the symlinks one resolution follows, as Linux's
// ELOOP limit does.
const MaxLinkHops = 40

// ResolveLink resolves the symlink link of a tree whose symlinks are links
// (path to target), one component at a time from the workspace root,
// and fails if the resolution climbs above the root. A component that is
// not one of links is taken for a directory.
func ResolveLink(links map[string]string, link string) error {
	var dir []string
	if d := path.Dir(link); d != "." {
		dir = strings.Split(d, "/")
	}
	todo := strings.Split(links[link], "/")
	hops := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(dir) == 0 {
				return errors.New("followed through the tree's other symlinks, it leads outside the workspace")
			}
			dir = dir[:len(dir)-1]
			continue
		}
		dir = append(dir, name)
		target, ok := links[strings.Join(dir, "/")]
		if !ok {
			continue
		}
		if hops++; hops > MaxLinkHops {
			// A loop, or a chain the kernel refuses to follow (ELOOP)
			// before it gets anywhere: harmless.
			return nil
		}
		dir = dir[:len(dir)-1]
		todo = append(strings.Split(target, "/"), todo...)
	}
	return nil
}

// Fold maps the paths a case-insensitive, normalization-insensitive
// filesystem treats as one to one string.
func Fold(p string) string {
	if isASCII(p) {
		return strings.ToLower(p)
	}
	return strings.ToLower(norm.NFC.String(p))
}

// FoldsToItself reports whether Fold(p) is p, without building it: p is
// ASCII without capitals. Two such paths fold to one only if equal.
func FoldsToItself(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// MaxPathLen and MaxNameLen are the limits on output paths, those of Linux (PATH_MAX, NAME_MAX): a longer
// path could not be restored anyway.
const (
	MaxPathLen = 4096
	MaxNameLen = 255
)

// CheckRel accepts clean, relative, slash-separated paths that stay
// inside the workspace. A backslash is refused: on Windows it separates
// directories, so "a\..\..\x" would climb out of the workspace there.
func CheckRel(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.IndexByte(p, 0) >= 0:
		return errors.New("NUL in path")
	case strings.IndexByte(p, '\\') >= 0:
		return errors.New("backslash in path (a directory separator on Windows)")
	case path.IsAbs(p):
		return errors.New("absolute path")
	case path.Clean(p) != p:
		return errors.New("path not clean")
	case p == ".":
		return errors.New("path is the workspace itself")
	case p == ".." || strings.HasPrefix(p, "../"):
		return errors.New("path leaves the workspace")
	case len(p) > MaxPathLen:
		return fmt.Errorf("path of %d bytes, over the %d limit", len(p), MaxPathLen)
	}
	for name := range strings.SplitSeq(p, "/") {
		if len(name) > MaxNameLen {
			return fmt.Errorf("name of %d bytes, over the %d limit", len(name), MaxNameLen)
		}
	}
	return nil
}

// CheckLinkTarget accepts a relative target that, resolved lexically from
// the link's directory, stays inside the workspace. (Restore must still not
// follow links it has itself created; this check keeps honest entries
// honest and rejects the obvious attacks early.)
func CheckLinkTarget(link, target string) error {
	switch {
	case target == "":
		return errors.New("empty target")
	case strings.IndexByte(target, 0) >= 0:
		return errors.New("NUL in target")
	case strings.IndexByte(target, '\\') >= 0:
		return errors.New("backslash in target (a directory separator on Windows)")
	case path.IsAbs(target):
		return errors.New("absolute target")
	case len(target) > MaxPathLen:
		return fmt.Errorf("target of %d bytes, over the %d limit", len(target), MaxPathLen)
	}
	j := path.Join(path.Dir(link), target)
	if j == ".." || strings.HasPrefix(j, "../") {
		return errors.New("target leaves the workspace")
	}
	return nil
}
