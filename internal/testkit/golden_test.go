package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Golden reports.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Errorf(format string, args ...any) { r.errors = append(r.errors, format) }

// TestGolden: equal content passes, a difference is reported with the
// file's path, and -update writes the file (and its directory).
func TestGolden(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "want.txt")
	if err := os.WriteFile(path, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	Golden(r, path, []byte("a\nb\n"))
	if len(r.errors) != 0 {
		t.Errorf("equal content reported: %v", r.errors)
	}
	Golden(r, path, []byte("a\nc\n"))
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "mismatch") {
		t.Errorf("a difference was not reported: %v", r.errors)
	}

	*update = true
	t.Cleanup(func() { *update = false })
	fresh := filepath.Join(dir, "sub", "fresh.txt")
	Golden(r, fresh, []byte("new\n"))
	if b, err := os.ReadFile(fresh); err != nil || string(b) != "new\n" {
		t.Errorf("under -update: %q, %v; want the file written", b, err)
	}
}
