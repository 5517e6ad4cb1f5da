package cache

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRestoreFileReplacesAndSetsMode(t *testing.T) {
	// The umask must not filter perm.
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)

	c := newDir(t)
	content := []byte("new content\n")
	d, err := c.PutBytes(content)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dst := filepath.Join(dir, "out")
	if err := os.WriteFile(dst, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.RestoreFile(d, dst, 0o755); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dst)
	if !bytes.Equal(got, content) {
		t.Errorf("dst = %q, want %q", got, content)
	}
	if st, _ := os.Stat(dst); st.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", st.Mode().Perm())
	}
	if names := listDir(t, dir); !cmp.Equal(names, []string{"out"}) {
		t.Errorf("dst dir holds %q, want only out", names)
	}
}

func TestRestoreFileReplacesSymlinkNotTarget(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	d, _ := c.PutBytes([]byte("data"))
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	dst := filepath.Join(dir, "link")
	if err := os.Symlink("victim", dst); err != nil {
		t.Fatal(err)
	}
	if err := c.RestoreFile(d, dst, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("restore wrote through a symlink: victim = %q", b)
	}
	if st, _ := os.Lstat(dst); !st.Mode().IsRegular() {
		t.Errorf("dst mode %v, want a regular file", st.Mode())
	}
}

func TestRestoreFileMissingDir(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	d, _ := c.PutBytes([]byte("data"))
	if err := c.RestoreFile(d, filepath.Join(t.TempDir(), "no", "such", "out"), 0o644); err == nil {
		t.Error("RestoreFile into a missing directory succeeded")
	}
}
