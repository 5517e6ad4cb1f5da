//go:build linux

package inputs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
)

// tree writes, below dir, files and directories of names that sort
// differently as names and as paths ("a" before "a.txt" but "a.txt"
// before "a/x"), nested directories, symbolic links to files, to
// directories and to nothing, and FIFOs (and links to one).
func tree(t testing.TB, dir string) {
	t.Helper()
	for _, f := range []string{
		"a/x", "a.txt", "a-b/y", "a/b/c/d/deep", "a/b/c/e", "b/1", "b/10", "b/2", "b/ä", "b/Z",
		"skip/me", "keep/skip", "keep/ok", "empty/.hidden", "z/z/z/z/z",
	} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 { // a directory of more names than one getdents reads
		p := filepath.Join(dir, "many", fmt.Sprintf("file-with-a-long-name-%04d", 299-i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "emptydir"), 0o755))
	must(os.Symlink("../a.txt", filepath.Join(dir, "b", "tofile")))
	must(os.Symlink("../a", filepath.Join(dir, "b", "todir")))
	must(os.Symlink("nothing", filepath.Join(dir, "b", "dangling")))
	must(syscall.Mkfifo(filepath.Join(dir, "b", "fifo"), 0o644))
	must(os.Symlink("fifo", filepath.Join(dir, "b", "tofifo")))
}

// TestWalkTreeIsWalkSerial: the parallel walk finds what the serial one
// does, in the same order, with the same stats, whatever the number of
// workers and whatever is skipped.
func TestWalkTreeIsWalkSerial(t *testing.T) {
	dir := t.TempDir()
	tree(t, dir)
	for _, tc := range []struct {
		name    string
		rel     string
		skip    func(string) bool
		workers int
	}{
		{"all, one worker", ".", func(string) bool { return false }, 1},
		{"all, two workers", ".", func(string) bool { return false }, 2},
		{"all, eight workers", ".", func(string) bool { return false }, 8},
		{"skips", ".", func(r string) bool { return r == "skip" || strings.HasSuffix(r, "/skip") || r == "b/10" }, 3},
		{"subtree", "a", func(string) bool { return false }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			abs := filepath.Join(dir, tc.rel)
			want, werr := walkSerial(abs, tc.rel, tc.skip, nil)
			got, _, gerr := walkTree(abs, tc.rel, tc.skip, tc.workers, []File{}, nil, nil)
			if werr != nil || gerr != nil {
				t.Fatalf("errors: serial %v, parallel %v", werr, gerr)
			}
			if len(want) < 3 {
				t.Fatalf("serial walk found only %d files", len(want))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("parallel walk differs from the serial one (-serial +parallel):\n%s", diff)
			}
			// Hashing the files as found (a memory that knows none)
			// takes their stats through their descriptors: the same.
			h := &coldHash{f: newFinder(t.TempDir(), 1), ctx: context.Background()}
			got, digests, gerr := walkTree(abs, tc.rel, tc.skip, tc.workers, []File{}, nil, h)
			if gerr != nil {
				t.Fatalf("hashing as found: %v", gerr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("parallel walk hashing as found differs from the serial one (-serial +parallel):\n%s", diff)
			}
			if len(digests) != len(got) {
				t.Fatalf("hashing as found: %d digests for %d files", len(digests), len(got))
			}
			hashed := 0
			for i, f := range got {
				if digests[i] != (cache.Digest{}) {
					hashed++
				}
				b, err := os.ReadFile(filepath.Join(abs, strings.TrimPrefix(f.Rel, tc.rel+"/")))
				if err != nil {
					t.Fatal(err)
				}
				if digests[i] != (cache.Digest{}) && digests[i] != cache.HashBytes(b) {
					t.Errorf("%s: digest %s, not its content's", f.Rel, digests[i].Short())
				}
			}
			if hashed == 0 {
				t.Error("hashing as found hashed nothing")
			}
		})
	}
}

// TestWalkTreeErrors: a directory that cannot be read fails both walks
// with the same error.
func TestWalkTreeErrors(t *testing.T) {
	none := func(string) bool { return false }
	gone := filepath.Join(t.TempDir(), "gone")
	_, werr := walkSerial(gone, "gone", none, nil)
	_, _, gerr := walkTree(gone, "gone", none, 2, nil, nil, nil)
	if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
		t.Errorf("errors: serial %v, parallel %v; want the same", werr, gerr)
	}
	if os.Geteuid() == 0 {
		return // root reads any directory
	}
	dir := t.TempDir()
	tree(t, dir)
	if err := os.Chmod(filepath.Join(dir, "a", "b"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "a", "b"), 0o755) })
	_, werr = walkSerial(dir, ".", none, nil)
	_, _, gerr = walkTree(dir, ".", none, 2, nil, nil, nil)
	if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
		t.Errorf("errors: serial %v, parallel %v; want the same", werr, gerr)
	}
}
