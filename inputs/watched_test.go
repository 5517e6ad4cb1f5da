package inputs

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/spec"
	"github.com/cairn-run/cairn/workspace"
	"github.com/cairn-run/cairn/workspace/watch"
)

// watchable skips the test where dir's filesystem cannot be watched (the
// watch is then never quiet, and every recheck walks).
func watchable(t *testing.T, dir string) {
	t.Helper()
	w := watch.New()
	defer w.Close()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	w.Dir(d)
	if err := w.Check(); err != nil {
		t.Skipf("no directory watch here: %v", err)
	}
}

// TestWatchedUnchanged: inputs found under a watch are Unchanged until any
// edit an expansion would see, made anywhere the walk went or through
// what the watch does not vouch for (a symlink's target, another hard
// link, the path of a directory input).
func TestWatchedUnchanged(t *testing.T) {
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	write := func(t *testing.T, path, content string) {
		t.Helper()
		must(t, os.MkdirAll(filepath.Dir(path), 0o755))
		must(t, os.WriteFile(path, []byte(content), 0o644))
	}
	tests := []struct {
		name   string
		inputs []string
		edit   func(t *testing.T, root, outside string)
		want   bool
	}{
		{"nothing", []string{"in.txt", "data", "link"}, func(*testing.T, string, string) {}, true},
		{"a missing input's path stays empty", []string{"data", "none.txt"}, func(*testing.T, string, string) {}, true},
		{"a glob", []string{"data/*.txt"}, func(*testing.T, string, string) {}, false},
		{"nested file edited", []string{"data"}, func(t *testing.T, root, _ string) {
			write(t, filepath.Join(root, "data/sub/deep/b.txt"), "bb\n")
		}, false},
		{"file added", []string{"data"}, func(t *testing.T, root, _ string) {
			write(t, filepath.Join(root, "data/c.txt"), "c\n")
		}, false},
		{"empty directory added", []string{"data"}, func(t *testing.T, root, _ string) {
			must(t, os.Mkdir(filepath.Join(root, "data/sub/new"), 0o755))
		}, false},
		{"file removed", []string{"data"}, func(t *testing.T, root, _ string) {
			must(t, os.Remove(filepath.Join(root, "data/a.txt")))
		}, false},
		{"mode changed", []string{"data"}, func(t *testing.T, root, _ string) {
			must(t, os.Chmod(filepath.Join(root, "data/a.txt"), 0o755))
		}, false},
		{"hard-linked file written through its other link", []string{"data"}, func(t *testing.T, _, outside string) {
			write(t, filepath.Join(outside, "hard.txt"), "HARD EDITED\n")
		}, false},
		{"symlink's target outside the tree written", []string{"data"}, func(t *testing.T, _, outside string) {
			write(t, filepath.Join(outside, "target.txt"), "TARGET EDITED\n")
		}, false},
		{"dangling symlink's target created", []string{"data"}, func(t *testing.T, _, outside string) {
			write(t, filepath.Join(outside, "later.txt"), "later\n")
		}, false},
		{"directory input's symlink retargeted", []string{"link"}, func(t *testing.T, root, _ string) {
			write(t, filepath.Join(root, "other/a.txt"), "a\n")
			must(t, os.Remove(filepath.Join(root, "link")))
			must(t, os.Symlink("other", filepath.Join(root, "link")))
		}, false},
		{"plain file input edited", []string{"data", "in.txt"}, func(t *testing.T, root, _ string) {
			write(t, filepath.Join(root, "in.txt"), "edited\n")
		}, false},
		{"missing input created", []string{"data", "none.txt"}, func(t *testing.T, root, _ string) {
			write(t, filepath.Join(root, "none.txt"), "now\n")
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			watchable(t, root)
			write(t, filepath.Join(root, "in.txt"), "in\n")
			write(t, filepath.Join(root, "data/a.txt"), "a\n")
			write(t, filepath.Join(root, "data/sub/deep/b.txt"), "b\n")
			write(t, filepath.Join(root, "real/x.txt"), "x\n")
			must(t, os.Symlink("real", filepath.Join(root, "link")))
			write(t, filepath.Join(outside, "hard.txt"), "hard\n")
			must(t, os.Link(filepath.Join(outside, "hard.txt"), filepath.Join(root, "data/hard.txt")))
			write(t, filepath.Join(outside, "target.txt"), "target\n")
			must(t, os.Symlink(filepath.Join(outside, "target.txt"), filepath.Join(root, "data/sym.txt")))
			must(t, os.Symlink(filepath.Join(outside, "later.txt"), filepath.Join(root, "data/dangling.txt")))

			ws := workspace.New(root)
			v := NewWatched(&ws)
			defer v.Close()
			f := &Finder{WS: &ws, Workers: 2, Watched: v}
			p := &spec.Phase{Addr: "p", Inputs: tt.inputs}
			if _, _, err := f.Files(p, map[string][]cache.OutputFile{"q": {{Path: "none.txt"}}}); err != nil {
				t.Fatal(err)
			}
			tt.edit(t, root, outside)
			if got := v.Unchanged(); got != tt.want {
				t.Errorf("Unchanged() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestWatchedSmallDirectories: a tree of many small directories is not
// watched (a run with nothing changed would pay more for the watch than
// a run with an edit saves), so it is never Unchanged.
func TestWatchedSmallDirectories(t *testing.T) {
	root := t.TempDir()
	watchable(t, root)
	for i := range watchMinDirs + 8 {
		p := filepath.Join(root, "data", strconv.Itoa(i), "f.txt")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("f\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws := workspace.New(root)
	v := NewWatched(&ws)
	defer v.Close()
	f := &Finder{WS: &ws, Workers: 2, Watched: v}
	if _, _, err := f.Files(&spec.Phase{Addr: "p", Inputs: []string{"data"}}, nil); err != nil {
		t.Fatal(err)
	}
	if v.Unchanged() {
		t.Error("Unchanged() = true for a tree of small directories, want false (not watched)")
	}
}
