package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// materialiseSpec: gen writes an incompressible read-only file (stored
// raw) and a compressible one (stored compressed); use reads them; edit,
// when asked, edits its input in place, as a careless phase might.
const materialiseSpec = `
phase "gen" {
  command = <<-SH
    echo gen >> counter.log
    mkdir -p out
    head -c 65536 /dev/urandom > out/rand.bin
    chmod 0444 out/rand.bin
    seq 1 20000 > out/seq.txt
  SH
  outputs = ["out/rand.bin", "out/seq.txt"]
}

phase "use" {
  inputs  = ["out/rand.bin", "out/seq.txt"]
  command = "echo use >> counter.log; cat out/rand.bin out/seq.txt | cksum > use.txt; if [ -e edit ]; then echo more >> out/seq.txt; fi"
  outputs = ["use.txt"]
}
`

// TestEditRestoredOutputs is T13: outputs restored from the cache are
// copies, never links to cache objects, so no edit of a workspace file
// (append, a same-size write in place, truncate, chmod u+w then write, a
// downstream phase appending to its input) can change a cached blob.
// After each edit the cache verifies clean, and the next run sees the
// workspace file differs and restores the cached bytes without running
// anything again. cairn has one materialisation mode, copy; hardlink and
// reflink modes do not exist, so their cells are "n/a".
func TestEditRestoredOutputs(t *testing.T) {
	w := newRelWS(t, materialiseSpec)
	w.mustRun("run")
	golden := map[string][]byte{}
	for _, f := range []string{"out/rand.bin", "out/seq.txt", "use.txt"} {
		b, err := os.ReadFile(w.path(f))
		if err != nil {
			t.Fatal(err)
		}
		golden[f] = b
	}
	// Materialise from the cache.
	if err := os.RemoveAll(w.path("out")); err != nil {
		t.Fatal(err)
	}
	if out := w.mustRun("run"); !strings.Contains(out, "gen: restored") {
		t.Fatalf("gen was not restored:\n%s", out)
	}

	// A restored file shares nothing with the cache: one link, and no
	// file in the cache has its inode.
	cacheInodes := map[uint64]string{}
	_ = filepath.WalkDir(w.cache, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := os.Stat(p); err == nil {
				cacheInodes[fi.Sys().(*syscall.Stat_t).Ino] = p
			}
		}
		return nil
	})
	for _, f := range []string{"out/rand.bin", "out/seq.txt"} {
		fi, err := os.Stat(w.path(f))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Nlink != 1 {
			t.Errorf("%s has %d links, want 1", f, st.Nlink)
		}
		if p, ok := cacheInodes[st.Ino]; ok {
			t.Errorf("%s is the cache's %s (same inode)", f, p)
		}
	}
	if fi, _ := os.Stat(w.path("out/rand.bin")); fi.Mode().Perm() != 0o444 {
		t.Errorf("out/rand.bin restored with mode %v, want 0444", fi.Mode().Perm())
	}

	writeAt := func(path string, b []byte, off int64) error {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		if _, err := f.WriteAt(b, off); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	edits := []struct {
		name string
		file string
		edit func(path string) error
	}{
		{"append", "out/seq.txt", func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			_, err = f.WriteString("20001\n")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			return err
		}},
		{"same-size", "out/seq.txt", func(p string) error { return writeAt(p, []byte("X"), 100) }},
		{"truncate", "out/seq.txt", func(p string) error { return os.Truncate(p, 1000) }},
		{"chmod-write", "out/rand.bin", func(p string) error {
			if err := os.Chmod(p, 0o644); err != nil {
				return err
			}
			// Same size, same mode afterwards: only the content says.
			if err := writeAt(p, bytes.Repeat([]byte{0}, 512), 4096); err != nil {
				return err
			}
			return os.Chmod(p, 0o444)
		}},
		{"same-size-raw", "out/rand.bin", func(p string) error {
			if err := os.Chmod(p, 0o644); err != nil {
				return err
			}
			b, _ := os.ReadFile(p)
			b[0] ^= 0xff
			if err := writeAt(p, b[:1], 0); err != nil {
				return err
			}
			return os.Chmod(p, 0o444)
		}},
		{"phase-edits-input", "out/seq.txt", nil},
	}
	var cells []string
	for _, e := range edits {
		if e.edit != nil {
			if err := e.edit(w.path(e.file)); err != nil {
				t.Fatalf("%s: %v", e.name, err)
			}
		} else {
			// use appends to out/seq.txt: run it for that.
			w.write("edit", "")
			w.mustRun("run", "--force", "use")
			if err := os.Remove(w.path("edit")); err != nil {
				t.Fatal(err)
			}
		}
		if b, _ := os.ReadFile(w.path(e.file)); bytes.Equal(b, golden[e.file]) {
			t.Fatalf("%s: the edit changed nothing", e.name)
		}
		if rep := w.verify(); rep.Blobs == 0 {
			t.Fatalf("%s: the cache holds no blob", e.name)
		}
		out := w.mustRun("run")
		detected := strings.Contains(out, "gen: restored")
		if !detected {
			t.Errorf("%s: the next run did not restore gen:\n%s", e.name, out)
		}
		for f, want := range golden {
			if got, _ := os.ReadFile(w.path(f)); !bytes.Equal(got, want) {
				t.Errorf("%s: after the next run %s differs from the cached output", e.name, f)
			}
		}
		cells = append(cells, fmt.Sprintf("copy/%s=%s", e.name, map[bool]string{true: "detected", false: "missed"}[detected]))
	}
	if got := w.read("counter.log"); strings.Count(got, "gen\n") != 1 {
		t.Errorf("gen ran %d times, want 1: every edit is undone from the cache", strings.Count(got, "gen\n"))
	}
	t.Logf("FIGURE T13 %s hardlink=n/a reflink=n/a", strings.Join(cells, " "))
}
