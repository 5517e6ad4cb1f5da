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
	for name, content := range map[string]string{
		"newer":   "cairn-cache 2\n",
		"garbage": "hello",
		"empty":   "",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "format"), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(root)
			if !errors.Is(err, ErrUnknownFormat) {
				t.Fatalf("Open = %v, want ErrUnknownFormat", err)
			}
			if got := listDir(t, root); !cmp.Equal(got, []string{"format"}) {
				t.Errorf("Open added %q to a foreign directory", got)
			}
		})
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
