package testkit

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// CalmFiles sets the mtime of the files names (under dir) an hour back,
// and waits until their ctime (which setting the mtime makes now) lies
// clearly in the past, so that what a run records of them is not racy.
func CalmFiles(t testing.TB, dir string, names ...string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	var newest time.Time
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		if c := time.Unix(st.Ctim.Sec, st.Ctim.Nsec); c.After(newest) {
			newest = c
		}
	}
	time.Sleep(time.Until(newest.Add(100 * time.Millisecond)))
}
