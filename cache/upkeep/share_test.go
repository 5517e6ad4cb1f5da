package upkeep

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cairn-run/cairn/cache"
)

// TestSharedModes: in a shared cache every directory is setgid and
// group-writable and every object group-readable, even under umask 077;
// a private cache follows the umask.
func TestSharedModes(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)

	root := filepath.Join(t.TempDir(), "cache")
	rep, err := MakeShared(root, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.Open(root) // a teammate opening it without saying "shared"
	if err != nil {
		t.Fatal(err)
	}
	if !c.Shared() {
		t.Fatal("a setgid cache root did not open as shared")
	}
	e := putSample(t, c)
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	var dirs, files int
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		m := st.Mode()
		switch {
		case d.IsDir():
			dirs++
			if m&fs.ModeSetgid == 0 || m.Perm() != 0o770 {
				t.Errorf("%s: mode %v, want drwxrws--- (setgid 2770)", p, m)
			}
		default:
			files++
			if m.Perm() != 0o440 {
				t.Errorf("%s: mode %v, want -r--r-----", p, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if dirs < 6 || files < 4 {
		t.Fatalf("walked %d dirs and %d files; the test saw too little", dirs, files)
	}
	if rep.Group == "" {
		t.Errorf("report names no group")
	}

	priv := newDir(t)
	e2 := putSample(t, priv)
	if err := priv.PutEntry(e2); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(entryPath(priv, e2.Key))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o400 {
		t.Errorf("private entry under umask 077: %v, want -r--------", st.Mode())
	}
	if priv.Shared() {
		t.Error("a private cache says it is shared")
	}
}

// TestMakeSharedFixesExisting: turning an existing private cache into a
// shared one fixes the modes of what is already there.
func TestMakeSharedFixesExisting(t *testing.T) {
	c := newDir(t)
	e := putSample(t, c)
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	rep, err := MakeShared(c.Root(), "")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Fixed == 0 {
		t.Fatal("nothing fixed")
	}
	st, err := os.Stat(entryPath(c, e.Key))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o440 {
		t.Errorf("entry mode %v after MakeShared", st.Mode())
	}
	rep2, err := MakeShared(c.Root(), "")
	if err != nil {
		t.Fatal(err)
	}
	if rep2.Fixed != 0 {
		t.Errorf("second MakeShared changed %d files", rep2.Fixed)
	}
}
