package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestStatPathMatchesOS: StatPath (no fs.FileInfo) and StatOf(os.Stat)
// describe every kind of file identically, so memory entries recorded
// through either compare equal.
func TestStatPathMatchesOS(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "f")
	must(os.WriteFile(file, []byte("x"), 0o640))
	special := filepath.Join(dir, "special")
	must(os.WriteFile(special, nil, 0o755))
	must(os.Chmod(special, 0o755|os.ModeSetuid|os.ModeSetgid|os.ModeSticky))
	fifo := filepath.Join(dir, "fifo")
	must(syscall.Mkfifo(fifo, 0o600))
	link := filepath.Join(dir, "link")
	must(os.Symlink("f", link))
	ws := &Workspace{Root: dir, dir: &rootDir{}}
	for _, p := range []string{file, special, fifo, link, dir} {
		fi, err := os.Stat(p)
		must(err)
		got, err := StatPath(p)
		must(err)
		if want := StatOf(fi); got != want {
			t.Errorf("%s: StatPath %+v, os.Stat %+v", filepath.Base(p), got, want)
		}
		rel, err := filepath.Rel(dir, p)
		must(err)
		viaDir, err := ws.StatRel(rel)
		must(err)
		if viaDir != got {
			t.Errorf("%s: StatRel %+v, StatPath %+v", rel, viaDir, got)
		}
		// The lstat variants describe the link itself, as os.Lstat does.
		lfi, err := os.Lstat(p)
		must(err)
		lgot, err := LstatPath(p)
		must(err)
		if want := StatOf(lfi); lgot != want {
			t.Errorf("%s: LstatPath %+v, os.Lstat %+v", filepath.Base(p), lgot, want)
		}
		lviaDir, err := ws.LstatRel(rel)
		must(err)
		if lviaDir != lgot {
			t.Errorf("%s: LstatRel %+v, LstatPath %+v", rel, lviaDir, lgot)
		}
	}
	if st, err := ws.LstatRel("link"); err != nil || st.Mode&fs.ModeSymlink == 0 {
		t.Errorf("LstatRel(link) = %+v, %v: want the symlink itself", st, err)
	}
	if _, err := ws.LstatRel("missing"); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), filepath.Join(dir, "missing")) {
		t.Errorf("LstatRel(missing) = %v: want a not-exist error naming the absolute path", err)
	}
	// A path leaving the root is resolved from its absolute form.
	sub := filepath.Join(dir, "sub")
	must(os.Mkdir(sub, 0o755))
	subWS := &Workspace{Root: sub, dir: &rootDir{}}
	if got, err := subWS.StatRel("../f"); err != nil || got.Size != 1 {
		t.Errorf("StatRel(../f): %+v, %v", got, err)
	}
	_, err := ws.StatRel("missing")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("StatRel of a missing file: %v, want fs.ErrNotExist", err)
	}
	// Its error names the absolute path, as StatPath's does.
	if want := filepath.Join(dir, "missing"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("StatRel of a missing file: %v, want an error naming %s", err, want)
	}
	if _, err := StatPath(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}
