package cache

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOpenCreatesLayout(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "a", "b")
	c, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if c.Root() != root {
		t.Errorf("Root() = %q, want %q", c.Root(), root)
	}
	want := []string{"CACHEDIR.TAG", "ac", "cas", "format", "quarantine", "tmp"}
	if diff := cmp.Diff(want, listDir(t, root)); diff != "" {
		t.Errorf("layout (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(filepath.Join(root, "format"))
	if err != nil || string(b) != "cairn-cache 1\n" {
		t.Errorf("format file = %q, %v", b, err)
	}
	tag, err := os.ReadFile(filepath.Join(root, "CACHEDIR.TAG"))
	if err != nil || string(tag[:43]) != "Signature: 8a477f597d28d172789f06886806bc55" {
		t.Errorf("CACHEDIR.TAG = %q, %v", tag, err)
	}
	if got := listDir(t, filepath.Join(root, "tmp")); len(got) != 0 {
		t.Errorf("tmp/ after Open: %q, want empty", got)
	}
	// Reopening is fine and changes nothing.
	if _, err := Open(root); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, listDir(t, root)); diff != "" {
		t.Errorf("layout after reopen (-want +got):\n%s", diff)
	}
}

func TestOpenRelativeRootIsMadeAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	c, err := Open("rel")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "rel"); c.Root() != want {
		t.Errorf("Root() = %q, want %q", c.Root(), want)
	}
}

func TestOpenRefusesUnknownFormat(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		content string
		damaged bool
	}{
		"newer":   {"cairn-cache 2\n", false},
		"garbage": {"hello", true},
		"empty":   {"", true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "format"), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(root)
			if !errors.Is(err, ErrUnknownFormat) {
				t.Fatalf("Open = %v, want ErrUnknownFormat", err)
			}
			if got := errors.Is(err, ErrDamagedFormat); got != tc.damaged {
				t.Errorf("errors.Is(%v, ErrDamagedFormat) = %v, want %v", err, got, tc.damaged)
			}
			// Without a cache's layout, even a damaged marker is a
			// foreign directory's: nothing is added to it.
			_, err = OpenWith(root, Options{AllowDamagedFormat: true})
			if !errors.Is(err, ErrUnknownFormat) {
				t.Fatalf("OpenWith(AllowDamagedFormat) = %v, want ErrUnknownFormat", err)
			}
			if got := listDir(t, root); !cmp.Equal(got, []string{"format"}) {
				t.Errorf("Open added %q to a foreign directory", got)
			}
		})
	}
}

// A damaged marker over a cache's layout opens with AllowDamagedFormat;
// Verify reports it, and with Repair rewrites it when the objects verify.
func TestVerifyRepairsDamagedFormat(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	c, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBytes([]byte("payload")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "format"), []byte("cairn-ca"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = OpenWith(root, Options{AllowDamagedFormat: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Verify(VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].ID != "format" || rep.ExitCode() != 1 {
		t.Fatalf("Verify = %+v, want one problem: the format marker", rep.Problems)
	}
	if rep, err = c.Verify(VerifyOptions{Repair: true}); err != nil || rep.ExitCode() != 0 {
		t.Fatalf("Verify(Repair) = %+v, %v", rep, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "format")); string(b) != formatContent {
		t.Errorf("format = %q after repair, want %q", b, formatContent)
	}
	if _, err := Open(root); err != nil {
		t.Errorf("Open after repair: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	if _, err := Open(""); err == nil {
		t.Error(`Open("") succeeded`)
	}
	file := writeFile(t, []byte("x"))
	if _, err := Open(file); err == nil {
		t.Error("Open of a regular file succeeded")
	}
}

func TestOpenConcurrent(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "cache")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = Open(root) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
}

func TestPaths(t *testing.T) {
	t.Parallel()
	c := &Dir{root: "/c"}
	d := HashBytes(nil)
	if got, want := c.blobPath(d, false), "/c/cas/e3/"+d.String(); got != want {
		t.Errorf("blobPath = %q, want %q", got, want)
	}
	if got, want := c.blobPath(d, true), "/c/cas/e3/"+d.String()+".zst"; got != want {
		t.Errorf("blobPath compressed = %q, want %q", got, want)
	}
	if got, want := c.entryPath(ActionID(d)), "/c/ac/e3/"+d.String(); got != want {
		t.Errorf("entryPath = %q, want %q", got, want)
	}
}
