package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestStatNameAtFallback: with statx and without it (fstatat), a name
// stats alike, as StatPath and LstatPath stat its path.
func TestStatNameAtFallback(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	type got struct {
		St    FileStat
		Nlink uint64
	}
	for _, tc := range []struct {
		name  string
		flags int
		want  func(string) (FileStat, error)
	}{
		{"f", 0, StatPath},
		{"l", 0, StatPath},
		{"l", unix.AT_SYMLINK_NOFOLLOW, LstatPath},
	} {
		want, err := tc.want(filepath.Join(dir, tc.name))
		if err != nil {
			t.Fatal(err)
		}
		name, _ := unix.BytePtrFromString(tc.name)
		var results []got
		for _, without := range []bool{false, true} {
			noStatx.Store(without)
			st, nlink, err := StatNameAt(fd, name, tc.flags)
			noStatx.Store(false)
			if err != nil {
				t.Fatalf("%s (fstatat %v): %v", tc.name, without, err)
			}
			results = append(results, got{st, nlink})
		}
		if d := cmp.Diff(got{want, 1}, results[0]); d != "" {
			t.Errorf("%s, flags %d, statx (-want +got):\n%s", tc.name, tc.flags, d)
		}
		if d := cmp.Diff(results[0], results[1]); d != "" {
			t.Errorf("%s, flags %d, fstatat differs from statx (-statx +fstatat):\n%s", tc.name, tc.flags, d)
		}
	}
	noent, _ := unix.BytePtrFromString("missing")
	if _, _, err := StatNameAt(fd, noent, 0); err != unix.ENOENT {
		t.Errorf("missing name: %v, want ENOENT", err)
	}
}
