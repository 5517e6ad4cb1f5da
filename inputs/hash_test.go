//go:build linux

package inputs

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// newFinderSaved hashes every input of root's phase "in" and saves the
// memory.
func newFinderSaved(t testing.TB, root string) error {
	f := newFinder(root, 2)
	digestAll(t, f, &spec.Phase{Addr: "p", Inputs: []string{"in"}})
	return f.Mem.Save()
}

func digestAll(t testing.TB, f *Finder, p *spec.Phase) []digested {
	t.Helper()
	files, _, err := f.Files(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return digestFiles(t, f, files, nil)
}

// digestFound is digestAll with the files of cold directories hashed as
// they are found (FilesDigested).
func digestFound(t testing.TB, f *Finder, p *spec.Phase) []digested {
	t.Helper()
	files, digests, _, err := f.FilesDigested(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return digestFiles(t, f, files, digests)
}

func digestFiles(t testing.TB, f *Finder, files []File, known []cache.Digest) []digested {
	t.Helper()
	digests, err := digestsOf(f, files, known)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]digested, len(files))
	for i, file := range files {
		out[i] = digested{file.Rel, digests[i], file.St.Mode}
	}
	return out
}

// digestsOf is f.Digests gathered into a slice; put must be called once
// for each file.
func digestsOf(f *Finder, files []File, known []cache.Digest) ([]cache.Digest, error) {
	digests := make([]cache.Digest, len(files))
	calls := make([]atomic.Int32, len(files))
	if err := f.Digests("p", files, known, func(i int, d cache.Digest) {
		calls[i].Add(1)
		digests[i] = d
	}); err != nil {
		return nil, err
	}
	for i := range calls {
		if n := calls[i].Load(); n != 1 {
			return nil, fmt.Errorf("%s: put %d times", files[i].Rel, n)
		}
	}
	return digests, nil
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
		for _, how := range []struct {
			name   string
			digest func(testing.TB, *Finder, *spec.Phase) []digested
		}{{"walked, then hashed", digestAll}, {"hashed as found", digestFound}} {
			f := newFinder(root, workers)
			if diff := cmp.Diff(want, how.digest(t, f, p)); diff != "" {
				t.Fatalf("%d workers, %s: digests differ from the serial ones (-serial +parallel):\n%s", workers, how.name, diff)
			}
			if n, _ := f.Mem.Hashed(); n != int64(len(want)) {
				t.Errorf("%d workers, %s: %d files hashed, want %d", workers, how.name, n, len(want))
			}
			// Every file is remembered: a second pass reads none.
			if diff := cmp.Diff(want, how.digest(t, f, p)); diff != "" {
				t.Fatalf("%d workers, %s, again: digests differ (-serial +parallel):\n%s", workers, how.name, diff)
			}
			if n, _ := f.Mem.Hashed(); n != int64(len(want)) {
				t.Errorf("%d workers, %s, again: %d files hashed in all, want %d", workers, how.name, n, len(want))
			}
		}
	}

	// The memory saved and loaded again: every digest is looked up, in
	// ranges of a few files on each worker (each range with its own
	// cursor), and no file is read.
	if err := newFinderSaved(t, root); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { lookupRange = n }(lookupRange)
	for _, lookupRange = range []int{1 << 14, 3} {
		for _, workers := range []int{1, 2, 5} {
			f := newFinder(root, workers)
			if diff := cmp.Diff(want, digestAll(t, f, p)); diff != "" {
				t.Fatalf("%d workers, ranges of %d, loaded: digests differ (-serial +parallel):\n%s", workers, lookupRange, diff)
			}
			if n, _ := f.Mem.Hashed(); n != 0 {
				t.Errorf("%d workers, ranges of %d, loaded: %d files hashed, want none", workers, lookupRange, n)
			}
		}
	}

	if err := os.Remove(filepath.Join(root, "digests")); err != nil {
		t.Fatal(err)
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
	digests, err := digestsOf(f, files, nil)
	if err != nil {
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

// TestEditWhileHashedIsNotRemembered: a file edited while it is read (its
// old content read, then rewritten with the same size and mtime) is never
// remembered with the old content's digest: neither this process's memory
// nor the saved one gives that digest for the file as it is now, and the
// next pass hashes its new content.
func TestEditWhileHashedIsNotRemembered(t *testing.T) {
	for _, how := range []struct {
		name   string
		digest func(testing.TB, *Finder, *spec.Phase) []digested
	}{{"walked, then hashed", digestAll}, {"hashed as found", digestFound}} {
		t.Run(how.name, func(t *testing.T) { editWhileHashed(t, how.digest) })
	}
}

func editWhileHashed(t *testing.T, digest func(testing.TB, *Finder, *spec.Phase) []digested) {
	root := t.TempDir()
	dir := filepath.Join(root, "in")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "f", "z"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("old content of "+name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testkit.CalmFiles(t, root, "in/a", "in/f", "in/z")
	edited := filepath.Join(dir, "f")
	calm, err := os.Stat(edited)
	if err != nil {
		t.Fatal(err)
	}
	// The hasher has read the old bytes: now the file changes under it,
	// keeping its size and (put back) its mtime and inode.
	var hits int
	testHookRead = func(name string) {
		if name != "f" {
			return
		}
		hits++
		f, err := os.OpenFile(edited, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := f.WriteAt([]byte("new"), 0); err != nil {
			t.Error(err)
		}
		f.Close()
		if err := os.Chtimes(edited, calm.ModTime(), calm.ModTime()); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookRead = nil }()

	p := &spec.Phase{Addr: "p", Inputs: []string{"in"}}
	f := newFinder(root, 2)
	digest(t, f, p)
	testHookRead = nil
	if hits != 1 {
		t.Fatalf("the hook saw f read %d times, want once", hits)
	}
	oldDigest := cache.HashBytes([]byte("old content of f"))
	newDigest := cache.HashBytes([]byte("new content of f"))
	now, err := workspace.StatPath(edited)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := f.Mem.Lookup("in/f", now); ok && d == oldDigest {
		t.Error("the memory gives the old content's digest for the edited file")
	}
	if err := f.Mem.Save(); err != nil {
		t.Fatal(err)
	}
	if d, ok := memories.LoadMemory(filepath.Join(root, "digests")).Lookup("in/f", now); ok && d == oldDigest {
		t.Error("the saved memory gives the old content's digest for the edited file")
	}
	for _, mem := range []string{"same process", "saved"} {
		g := f
		if mem == "saved" {
			g = newFinder(root, 2)
		}
		for _, got := range digest(t, g, p) {
			if got.Rel == "in/f" && got.Digest != newDigest {
				t.Errorf("%s memory, next pass: in/f has digest %s, want its new content's %s", mem, got.Digest.Short(), newDigest.Short())
			}
		}
	}
}

// TestLargeFilesOfOneDirectoryHashedTogether: inputs of gigabytes side
// by side in one directory are hashed on all cores, not one after the
// other by the worker that took their directory. Each large file's worker
// waits at a barrier for the other's; hashed one after the other, the
// first gives up waiting and the test fails.
func TestLargeFilesOfOneDirectoryHashedTogether(t *testing.T) {
	root := t.TempDir()
	big := make([]byte, 2*smallFile)
	if err := os.Mkdir(filepath.Join(root, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"g0", "g1"} {
		big[0] = n[1]
		if err := os.WriteFile(filepath.Join(root, "in", n), big, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "in", "small"), []byte("s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	arrived := make(chan struct{}, 2)
	together := make(chan bool, 2)
	largeHashing = func() {
		arrived <- struct{}{}
		deadline := time.After(10 * time.Second)
		for {
			select {
			case <-deadline:
				together <- false
				return
			default:
			}
			if len(arrived) == 2 {
				together <- true
				return
			}
			runtime.Gosched()
		}
	}
	t.Cleanup(func() { largeHashing = func() {} })
	f := newFinder(root, 2)
	p := &spec.Phase{Addr: "hash", Inputs: []string{"in/g0", "in/g1", "in/small"}}
	got := digestAll(t, f, p)
	if len(got) != 3 {
		t.Fatalf("digested %d files, want 3", len(got))
	}
	if len(together) != 2 {
		t.Fatalf("%d large files were hashed each by a worker of its own, want 2", len(together))
	}
	for range 2 {
		if !<-together {
			t.Fatal("the two large files of in/ were hashed one after the other, not on both workers")
		}
	}
}
