//go:build linux

package inputs

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/internal/testkit"
	"github.com/cairn-run/cairn/memories"
	"github.com/cairn-run/cairn/spec"
	"github.com/cairn-run/cairn/workspace"
)

type digested struct {
	Rel    string
	Digest cache.Digest
	Mode   fs.FileMode
}

// serialDigests is what a phase of one directory input's key holds of
// its files when they are found by walkSerial, sorted by path and hashed
// one by one by path.
func serialDigests(t testing.TB, root, rel string) []digested {
	t.Helper()
	files, err := walkSerial(filepath.Join(root, rel), rel, func(string) bool { return false }, nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(files, func(a, b File) int { return strings.Compare(a.Rel, b.Rel) })
	var out []digested
	for _, f := range files {
		d, _, err := cache.HashFile(filepath.Join(root, f.Rel))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, digested{f.Rel, d, f.St.Mode})
	}
	return out
}

func newFinder(root string, workers int) *Finder {
	ws := workspace.New(root)
	return &Finder{WS: &ws, Mem: memories.LoadMemory(filepath.Join(root, "digests")), Workers: workers, Ctx: context.Background}
}

func digestAll(t testing.TB, f *Finder, p *spec.Phase) []digested {
	t.Helper()
	files, _, err := f.Files(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	digests, modes := make([]cache.Digest, len(files)), make([]fs.FileMode, len(files))
	if err := f.Digests("p", files, digests, modes); err != nil {
		t.Fatal(err)
	}
	out := make([]digested, len(files))
	for i, file := range files {
		out[i] = digested{file.Rel, digests[i], modes[i]}
	}
	return out
}

// TestDigestsAreSerials: a directory input's files, walked in parallel
// and hashed relative to their open directories, give the paths, digests
// and modes (so the key) the serial walk and hashing by path give; the
// memory then knows every calm file, and an edit is seen.
func TestDigestsAreSerials(t *testing.T) {
	root := t.TempDir()
	tree(t, filepath.Join(root, "in"))
	big := make([]byte, smallFile+12345) // hashed by cache.HashFileContext
	for i := range big {
		big[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(root, "in", "b", "big"), big, 0o755); err != nil {
		t.Fatal(err)
	}
	var names []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			names = append(names, rel)
		}
		return nil
	})
	testkit.CalmFiles(t, root, names...)
	p := &spec.Phase{Addr: "p", Inputs: []string{"in"}}
	want := serialDigests(t, root, "in")

	for _, workers := range []int{1, 2, 5} {
		f := newFinder(root, workers)
		if diff := cmp.Diff(want, digestAll(t, f, p)); diff != "" {
			t.Fatalf("%d workers: digests differ from the serial ones (-serial +parallel):\n%s", workers, diff)
		}
		if n, _ := f.Mem.Hashed(); n != int64(len(want)) {
			t.Errorf("%d workers: %d files hashed, want %d", workers, n, len(want))
		}
		// Every file is remembered: a second pass reads none.
		if diff := cmp.Diff(want, digestAll(t, f, p)); diff != "" {
			t.Fatalf("%d workers, again: digests differ (-serial +parallel):\n%s", workers, diff)
		}
		if n, _ := f.Mem.Hashed(); n != int64(len(want)) {
			t.Errorf("%d workers, again: %d files hashed in all, want %d", workers, n, len(want))
		}
	}

	// A file edited after it was stat'ed, before it is hashed: its new
	// content is hashed and nothing is remembered under the old stat.
	f := newFinder(root, 2)
	files, _, err := f.Files(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	edited := filepath.Join(root, "in", "a", "b", "c", "e")
	if err := os.WriteFile(edited, []byte("edited, longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	digests, modes := make([]cache.Digest, len(files)), make([]fs.FileMode, len(files))
	if err := f.Digests("p", files, digests, modes); err != nil {
		t.Fatal(err)
	}
	for i, file := range files {
		if file.Rel != "in/a/b/c/e" {
			continue
		}
		if digests[i] != cache.HashBytes([]byte("edited, longer")) {
			t.Errorf("edited file: digest %s, want that of its new content", digests[i].Short())
		}
		if _, ok := f.Mem.Lookup(file.Rel, file.St); ok {
			t.Error("edited file: remembered under the stat it had before the edit")
		}
	}
}
