package upkeep

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cairn-run/cairn/cache"
)

// ShareReport says what [MakeShared] changed.
type ShareReport struct {
	Root    string
	Group   string // group name (or id) the cache belongs to
	Fixed   int    // files and directories whose group or mode was changed
	Skipped []string
}

// MakeShared turns root into a group-shared cache (creating it if missing):
// root and every directory under it setgid and group-writable (2770),
// objects group-readable (0440), usage logs and lock files group-writable
// (0660), all in group (a name or numeric id; "" keeps root's current
// group). Files owned by other users cannot be changed by us; they are
// listed in Skipped for their owner (or root) to fix. Running it again is
// harmless. Every cairn that opens the cache afterwards sees the setgid bit
// on root and keeps these modes, whatever its user's umask.
func MakeShared(root, group string) (*ShareReport, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	gid := -1
	if group != "" {
		gid, err = lookupGroup(group)
		if err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(abs, 0o777); err != nil {
		return nil, err
	}
	if gid >= 0 {
		if err := os.Chown(abs, -1, gid); err != nil {
			return nil, fmt.Errorf("give %s to group %s: %w (you must own it and be a member of the group)", abs, group, err)
		}
	}
	if err := os.Chmod(abs, cache.SharedDirPerm|fs.ModeSetgid); err != nil {
		return nil, fmt.Errorf("make %s group-shared: %w", abs, err)
	}
	// Opening lays out the cache with shared modes (root is setgid now).
	c, err := cache.Open(abs)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	rootGid := int(st.Sys().(*syscall.Stat_t).Gid)
	rep := &ShareReport{Root: abs, Group: groupName(rootGid)}
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if !d.IsDir() && filepath.Dir(p) == filepath.Join(abs, cache.TempDir) {
			return nil // files being written; their writer sets the mode
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		want := sharedMode(c, p, d.IsDir())
		sys := info.Sys().(*syscall.Stat_t)
		okMode := info.Mode()&(fs.ModePerm|fs.ModeSetgid) == want
		okGroup := int(sys.Gid) == rootGid
		if okMode && okGroup {
			return nil
		}
		if int(sys.Uid) != os.Geteuid() && os.Geteuid() != 0 {
			rep.Skipped = append(rep.Skipped, p)
			return nil
		}
		if !okGroup {
			if err := os.Lchown(p, -1, rootGid); err != nil {
				rep.Skipped = append(rep.Skipped, p)
				return nil
			}
		}
		if err := os.Chmod(p, want); err != nil {
			rep.Skipped = append(rep.Skipped, p)
			return nil
		}
		rep.Fixed++
		return nil
	})
	return rep, err
}

// sharedMode is the mode path p should have in a shared cache.
func sharedMode(c *cache.Dir, p string, dir bool) fs.FileMode {
	if dir {
		return cache.SharedDirPerm | fs.ModeSetgid
	}
	rel, _ := filepath.Rel(c.Root(), p)
	top, _, _ := cutPath(rel)
	switch top {
	case "sessions", "locks":
		return cache.SharedRWPerm
	}
	return cache.SharedObjectPerm
}

func cutPath(rel string) (first, rest string, ok bool) {
	for i := 0; i < len(rel); i++ {
		if rel[i] == filepath.Separator {
			return rel[:i], rel[i+1:], true
		}
	}
	return rel, "", false
}

func lookupGroup(name string) (int, error) {
	if n, err := strconv.Atoi(name); err == nil {
		return n, nil
	}
	g, err := user.LookupGroup(name)
	if err == nil {
		return strconv.Atoi(g.Gid)
	}
	if _, gid, ok := getentGroup(name); ok {
		return gid, nil
	}
	return 0, fmt.Errorf("group %q: %w", name, err)
}

func groupName(gid int) string {
	if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		return g.Name
	}
	if name, _, ok := getentGroup(strconv.Itoa(gid)); ok {
		return name
	}
	return strconv.Itoa(gid)
}

// getentGroup asks getent(1) for a group by name or id. A cairn built
// without cgo (as `make build` builds it: a static binary starts faster)
// reads only /etc/group itself; getent also asks the system's other
// sources (LDAP, SSSD), as a team's shared group often lives there.
func getentGroup(key string) (name string, gid int, ok bool) {
	out, err := exec.Command("getent", "group", key).Output()
	if err != nil {
		return "", 0, false
	}
	return parseGroupLine(strings.TrimSpace(string(out)))
}

// parseGroupLine parses one group(5) line: name:password:gid:members.
func parseGroupLine(line string) (name string, gid int, ok bool) {
	line, _, _ = strings.Cut(line, "\n")
	f := strings.SplitN(line, ":", 4)
	if len(f) < 3 || f[0] == "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return f[0], n, true
}
