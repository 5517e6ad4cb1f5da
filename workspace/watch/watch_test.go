//go:build linux

package watch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// roots are the machine's filesystems the tests run on: the disk under
// /tmp and tmpfs.
func roots(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{"tmp": t.TempDir()}
	shm, err := os.MkdirTemp("/dev/shm", "watch-test-")
	if err != nil {
		t.Logf("no /dev/shm: %v", err)
		return out
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	out["shm"] = shm
	return out
}

// makeTree writes a small tree below root: files at two depths, an empty
// directory, and an outside directory beside it (not watched).
func makeTree(t *testing.T, root string) (tree, outside string) {
	t.Helper()
	tree, outside = filepath.Join(root, "tree"), filepath.Join(root, "outside")
	for _, d := range []string{"sub/deep", "empty"} {
		if err := os.MkdirAll(filepath.Join(tree, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.txt", "sub/b.txt", "sub/deep/c.txt", "../outside/o.txt"} {
		if err := os.WriteFile(filepath.Join(tree, f), []byte("content "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tree, outside
}

// walk does what an input walk does: each directory is opened, handed to
// Dir, then read; each file's entry goes through File.
func walk(t *testing.T, w *Watch, dir string) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w.Dir(f)
	ents, err := f.ReadDir(-1)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			walk(t, w, p)
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		w.File(p, uint64(st.Nlink), e.Type()&fs.ModeSymlink != 0)
	}
}

func TestQuiet(t *testing.T) {
	write := func(p string, data string) error {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		if _, err := f.WriteString(data); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	cases := []struct {
		name  string
		act   func(tree, outside string) error
		quiet bool
		why   string // a substring of Check's reason
	}{
		{name: "nothing happens", act: func(string, string) error { return nil }, quiet: true},
		{name: "reads only", act: func(tree, _ string) error {
			_, err := os.ReadFile(filepath.Join(tree, "sub/deep/c.txt"))
			if err == nil {
				_, err = os.ReadDir(filepath.Join(tree, "sub"))
			}
			return err
		}, quiet: true},
		{name: "file written", act: func(tree, _ string) error {
			return write(filepath.Join(tree, "a.txt"), "more")
		}, why: `"a.txt" changed in a watched directory (modify)`},
		{name: "deep file written", act: func(tree, _ string) error {
			return write(filepath.Join(tree, "sub/deep/c.txt"), "more")
		}, why: `"c.txt"`},
		{name: "truncated", act: func(tree, _ string) error {
			return os.Truncate(filepath.Join(tree, "sub/b.txt"), 0)
		}, why: `"b.txt" changed in a watched directory (modify)`},
		{name: "chmod", act: func(tree, _ string) error {
			return os.Chmod(filepath.Join(tree, "a.txt"), 0o600)
		}, why: "(attrib)"},
		{name: "touched", act: func(tree, _ string) error {
			now := time.Now().Add(time.Hour)
			return os.Chtimes(filepath.Join(tree, "a.txt"), now, now)
		}, why: "(attrib)"},
		{name: "file created", act: func(tree, _ string) error {
			return os.WriteFile(filepath.Join(tree, "empty/new.txt"), nil, 0o644)
		}, why: `"new.txt" changed in a watched directory (create)`},
		{name: "file deleted", act: func(tree, _ string) error {
			return os.Remove(filepath.Join(tree, "sub/b.txt"))
		}, why: "(delete)"},
		{name: "renamed in", act: func(tree, outside string) error {
			return os.Rename(filepath.Join(outside, "o.txt"), filepath.Join(tree, "sub/o.txt"))
		}, why: "(moved_to)"},
		{name: "renamed out", act: func(tree, outside string) error {
			return os.Rename(filepath.Join(tree, "sub/b.txt"), filepath.Join(outside, "b.txt"))
		}, why: "(moved_from)"},
		{name: "renamed within", act: func(tree, _ string) error {
			return os.Rename(filepath.Join(tree, "a.txt"), filepath.Join(tree, "sub/a.txt"))
		}, why: "(moved_from)"},
		{name: "new subdirectory", act: func(tree, _ string) error {
			return os.Mkdir(filepath.Join(tree, "empty/newdir"), 0o755)
		}, why: "(create|isdir)"},
		{name: "watched directory deleted", act: func(tree, _ string) error {
			return os.RemoveAll(filepath.Join(tree, "sub/deep"))
		}, why: "(delete)"},
		{name: "watched directory renamed away", act: func(tree, outside string) error {
			return os.Rename(filepath.Join(tree, "sub"), filepath.Join(outside, "sub"))
		}, why: "(moved_from|isdir)"},
		{name: "mapping written and closed", act: func(tree, _ string) error {
			f, err := os.OpenFile(filepath.Join(tree, "a.txt"), os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			m, err := unix.Mmap(int(f.Fd()), 0, 4, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				return err
			}
			m[0] = 'X'
			return unix.Munmap(m)
		}, why: "(close_write)"},
	}
	for fsName, root := range roots(t) {
		for _, c := range cases {
			t.Run(fsName+"/"+c.name, func(t *testing.T) {
				base, err := os.MkdirTemp(root, "case-")
				if err != nil {
					t.Fatal(err)
				}
				tree, outside := makeTree(t, base)
				w := New()
				defer w.Close()
				walk(t, w, tree)
				if err := c.act(tree, outside); err != nil {
					t.Fatal(err)
				}
				err = w.Check()
				if got := err == nil; got != c.quiet {
					t.Fatalf("quiet = %v (%v), want %v", got, err, c.quiet)
				}
				if err != nil && !strings.Contains(err.Error(), c.why) {
					t.Errorf("reason %q, want it to hold %q", err, c.why)
				}
				if w.Quiet() != c.quiet {
					t.Errorf("a second Quiet changed its answer")
				}
			})
		}
	}
}

// TestWriteBetweenDirAndRead checks the order the walk relies on: a
// change made after Dir but before the directory is read is seen.
func TestWriteBetweenDirAndRead(t *testing.T) {
	for fsName, root := range roots(t) {
		t.Run(fsName, func(t *testing.T) {
			base, err := os.MkdirTemp(root, "case-")
			if err != nil {
				t.Fatal(err)
			}
			tree, _ := makeTree(t, base)
			w := New()
			defer w.Close()
			f, err := os.Open(tree)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			w.Dir(f)
			if err := os.WriteFile(filepath.Join(tree, "between.txt"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := f.ReadDir(-1); err != nil {
				t.Fatal(err)
			}
			if err := w.Check(); err == nil || !strings.Contains(err.Error(), `"between.txt"`) {
				t.Fatalf("Check() = %v, want the write to between.txt", err)
			}
		})
	}
}

// TestWriteThroughDescriptorOpenedBefore checks that a file opened before
// its directory was watched still raises the event when written after.
func TestWriteThroughDescriptorOpenedBefore(t *testing.T) {
	tree, _ := makeTree(t, t.TempDir())
	f, err := os.OpenFile(filepath.Join(tree, "sub/b.txt"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := New()
	defer w.Close()
	walk(t, w, tree)
	if !w.Quiet() {
		t.Fatalf("not quiet before the write: %v", w.Check())
	}
	if _, err := f.WriteAt([]byte("late"), 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Check(); err == nil || !strings.Contains(err.Error(), `"b.txt"`) {
		t.Fatalf("Check() = %v, want the write to b.txt", err)
	}
}

func TestUnvouched(t *testing.T) {
	tree, outside := makeTree(t, t.TempDir())
	linked := filepath.Join(tree, "sub/linked.txt")
	if err := os.Link(filepath.Join(outside, "o.txt"), linked); err != nil {
		t.Fatal(err)
	}
	symlink := filepath.Join(tree, "sym.txt")
	if err := os.Symlink(filepath.Join(outside, "o.txt"), symlink); err != nil {
		t.Fatal(err)
	}
	w := New()
	defer w.Close()
	walk(t, w, tree)
	// Written through its other link, outside the tree: no event in the
	// watched directory, which is why the caller must stat these itself.
	if err := os.WriteFile(filepath.Join(outside, "o.txt"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Check(); err != nil {
		t.Fatalf("Check() = %v; this test needs the change to pass unseen", err)
	}
	if diff := cmp.Diff([]string{linked, symlink}, w.Unvouched()); diff != "" {
		t.Errorf("Unvouched() (-want +got):\n%s", diff)
	}
	if w.File(filepath.Join(tree, "a.txt"), 1, false) {
		t.Errorf("File said to stat a plain file with one link")
	}
}

func TestUnvouchedLimit(t *testing.T) {
	w := New()
	defer w.Close()
	for i := range maxUnvouched {
		if !w.File("/x/"+string(rune('a'+i%26)), 2, false) {
			t.Fatal("File said not to stat a hard-linked file")
		}
	}
	if !w.Quiet() {
		t.Fatalf("not quiet at the limit: %v", w.Check())
	}
	w.File("/x/one-more", 1, true)
	if err := w.Check(); err == nil || !strings.Contains(err.Error(), "more than 4096 files") {
		t.Fatalf("Check() = %v, want the limit", err)
	}
}

func TestNotQuiet(t *testing.T) {
	dirFile := func(t *testing.T, p string) *os.File {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	cases := []struct {
		name string
		do   func(t *testing.T, w *Watch)
		why  string
	}{
		{name: "descriptor not open", do: func(t *testing.T, w *Watch) {
			w.DirFD(-1, "/nowhere")
		}, why: "cannot watch /nowhere: bad file descriptor"},
		{name: "directory closed before Dir", do: func(t *testing.T, w *Watch) {
			f := dirFile(t, t.TempDir())
			f.Close()
			w.Dir(f)
		}, why: "cannot watch"},
		{name: "not a directory", do: func(t *testing.T, w *Watch) {
			p := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			w.Dir(dirFile(t, p))
		}, why: "not a directory"},
		{name: "procfs", do: func(t *testing.T, w *Watch) {
			w.Dir(dirFile(t, "/proc/self"))
		}, why: "its filesystem (type 0x9fa0) is not one"},
		{name: "overlayfs", do: func(t *testing.T, w *Watch) {
			w.Dir(dirFile(t, overlay(t)))
		}, why: "its filesystem (type 0x794c7630) is not one"},
		{name: "one bad directory among good ones", do: func(t *testing.T, w *Watch) {
			tree, _ := makeTree(t, t.TempDir())
			walk(t, w, tree)
			w.Dir(dirFile(t, "/proc/self"))
			walk(t, w, tree)
		}, why: "/proc/self"},
		{name: "closed", do: func(t *testing.T, w *Watch) {
			tree, _ := makeTree(t, t.TempDir())
			walk(t, w, tree)
			w.Close()
			walk(t, w, tree) // Dir after Close is ignored, not a panic
		}, why: "the watch is closed"},
		{name: "mount below a watched directory", do: func(t *testing.T, w *Watch) {
			tree, _ := makeTree(t, t.TempDir())
			walk(t, w, tree)
			mountTmpfs(t, filepath.Join(tree, "empty"))
		}, why: "a filesystem was mounted or unmounted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := New()
			defer w.Close()
			c.do(t, w)
			err := w.Check()
			if err == nil || !strings.Contains(err.Error(), c.why) {
				t.Fatalf("Check() = %v, want it to hold %q", err, c.why)
			}
			if w.Quiet() {
				t.Fatal("quiet after all")
			}
		})
	}
}

func TestNilWatch(t *testing.T) {
	var w *Watch
	w.Dir(os.Stdin)
	w.DirFD(0, "stdin")
	if !w.File("/a", 2, false) || w.File("/b", 1, false) {
		t.Error("File on a nil watch")
	}
	if w.Quiet() || w.Check() == nil || w.Unvouched() != nil || w.Close() != nil {
		t.Error("a nil watch is quiet or holds something")
	}
}

// mountTmpfs mounts a tmpfs on dir until the test ends, or skips the
// test where mounting is not permitted.
func mountTmpfs(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Mount("watch-test", dir, "tmpfs", 0, "size=1m"); err != nil {
		skipUnlessPermitted(t, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
}

// overlay mounts an overlayfs of two directories until the test ends,
// or skips the test where that is not permitted.
func overlay(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := "lowerdir=" + base + "/lower,upperdir=" + base + "/upper,workdir=" + base + "/work"
	merged := filepath.Join(base, "merged")
	if err := unix.Mount("watch-test", merged, "overlay", 0, opts); err != nil {
		skipUnlessPermitted(t, err)
	}
	t.Cleanup(func() { unix.Unmount(merged, unix.MNT_DETACH) })
	return merged
}

func skipUnlessPermitted(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.ENODEV) {
		t.Skipf("cannot mount here (%v): the case needs a mount", err)
	}
	t.Fatal(err)
}

// TestConcurrent hands directories to one watch from several goroutines,
// as a parallel walk does, and closes it while they may still run.
func TestConcurrent(t *testing.T) {
	tree, _ := makeTree(t, t.TempDir())
	w := New()
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			walk(t, w, tree)
		}()
	}
	for range 4 {
		<-done
	}
	if err := w.Check(); err != nil {
		t.Fatalf("Check() = %v, want quiet", err)
	}
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			walk(t, w, tree)
		}()
	}
	w.Close()
	for range 4 {
		<-done
	}
	if w.Quiet() {
		t.Fatal("quiet after Close")
	}
}
