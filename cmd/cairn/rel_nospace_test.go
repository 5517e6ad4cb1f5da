package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory (H8). It
// needs root: without it the test is skipped, unless
// CAIRN_REQUIRE_SERVICES is set (CI), where it fails.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CAIRN_REQUIRE_SERVICES") != "" {
			t.Fatal("mounting a tmpfs needs root, and CAIRN_REQUIRE_SERVICES is set")
		}
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		if os.Getenv("CAIRN_REQUIRE_SERVICES") != "" {
			t.Fatalf("mount tmpfs: %v", err)
		}
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// growTmpfs frees space by making the tmpfs at dir bigger.
func growTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size="+size); err != nil {
		t.Fatal(err)
	}
}

// fill writes a file in dir until the filesystem is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// Down to the last bytes.
	for {
		if _, err := f.Write(buf[:1]); err != nil {
			break
		}
	}
	return p
}

// tempFiles returns the temp files (and their bytes) under the cache.
func tempFiles(t *testing.T, dir string) (int, int64) {
	t.Helper()
	n, size := 0, int64(0)
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(rel, "tmp"+string(filepath.Separator)) || strings.Contains(d.Name(), ".tmp") {
			n++
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	return n, size
}

// nospaceSpec: small is cached first (the objects that must stay
// intact); big writes 10 MiB that does not fit; after reads it.
const nospaceSpec = `
phase "small" {
  command = "echo small > small.txt"
  outputs = ["small.txt"]
}

phase "big" {
  inputs  = ["small.txt"]
  command = "head -c 10485760 /dev/urandom > big.bin"
  outputs = ["big.bin"]
}

phase "after" {
  inputs  = ["big.bin"]
  command = "wc -c < big.bin > after.txt"
  outputs = ["after.txt"]
}
`

// TestNoSpace is T14: a full disk under the cache or under the workspace
// (where the run records live) fails the run at once with an error that
// names the phase, the path, the free space and what to do; it leaves no
// partial object or temp file in the cache, and the objects already there
// intact; once there is room, cairn resume finishes the work. A cache
// filled to the last byte gives the same clear failure, and cairn cache
// gc still works on it.
func TestNoSpace(t *testing.T) {
	var figures []string
	check := func(t *testing.T, w *relWS, smallKey string) {
		t.Helper()
		if n, size := tempFiles(t, w.cache); n > 0 {
			t.Errorf("%d temp files (%d bytes) left in the cache", n, size)
		}
		w.verify()
		if w.entry(smallKey) == nil {
			t.Errorf("the entry cached before the failure is gone")
		}
	}
	resume := func(t *testing.T, w *relWS) {
		t.Helper()
		w.mustRun("resume")
		if got := strings.TrimSpace(w.read("after.txt")); got != "10485760" {
			t.Errorf("after resume, after.txt = %q, want 10485760", got)
		}
		w.verify()
	}

	t.Run("cache-full", func(t *testing.T) {
		w := newRelWS(t, nospaceSpec)
		w.cache = mountTmpfs(t, "4m")
		w.mustRun("run", "small")
		smallKey := w.latest().Phases["small"].Key
		began := time.Now()
		code, out := w.run("run")
		took := time.Since(began)
		if code != exitFailed {
			t.Fatalf("exit %d, want %d\n%s", code, exitFailed, out)
		}
		for _, want := range []string{"phase big failed", "big.bin", "no space left on device", "free on the filesystem of " + w.cache, "cairn cache gc", "cairn resume"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		st := w.latest()
		if st.Status != "failed" || st.Phases["big"].Status != "failed" || st.Phases["after"].Status != "blocked" {
			t.Errorf("run %s, big %s, after %s; want failed, failed, blocked", st.Status, st.Phases["big"].Status, st.Phases["after"].Status)
		}
		check(t, w, smallKey)
		growTmpfs(t, w.cache, "64m")
		resume(t, w)
		figures = append(figures, "cache_full_time_to_failure="+took.Round(time.Millisecond).String())
	})

	t.Run("workspace-full", func(t *testing.T) {
		ws := mountTmpfs(t, "4m")
		w := newRelWS(t, nospaceSpec)
		w.dir = ws
		w.write("experiment.hcl", nospaceSpec)
		t.Cleanup(func() { killWorkspaceProcs(ws) })
		w.mustRun("run", "small")
		smallKey := w.latest().Phases["small"].Key
		began := time.Now()
		code, out := w.run("run")
		took := time.Since(began)
		if code != exitFailed {
			t.Fatalf("exit %d, want %d\n%s", code, exitFailed, out)
		}
		for _, want := range []string{"phase big failed", "workspace's filesystem is full", "free on " + ws, "cairn resume"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		check(t, w, smallKey)
		growTmpfs(t, ws, "64m")
		resume(t, w)
		figures = append(figures, "workspace_full_time_to_failure="+took.Round(time.Millisecond).String())
	})

	t.Run("cache-prefilled", func(t *testing.T) {
		w := newRelWS(t, nospaceSpec)
		w.cache = mountTmpfs(t, "4m")
		w.mustRun("run", "small")
		smallKey := w.latest().Phases["small"].Key
		filler := fill(t, w.cache)
		code, out := w.run("run")
		if code != exitFailed {
			t.Fatalf("exit %d, want %d\n%s", code, exitFailed, out)
		}
		for _, want := range []string{"phase big failed", "no space left on device", "cairn cache gc"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		// GC needs no room to work in.
		if code, out := w.run("cache", "gc", "--max-size", "1K"); code != 0 {
			t.Errorf("cache gc on a full cache: exit %d\n%s", code, out)
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		if n, size := tempFiles(t, w.cache); n > 0 {
			t.Errorf("%d temp files (%d bytes) left in the cache", n, size)
		}
		w.verify()
		_ = smallKey // gc may have evicted it: that is what it is for
		growTmpfs(t, w.cache, "64m")
		resume(t, w)
	})
	t.Logf("FIGURE T14 %s temp_bytes_left=0 resume=success", strings.Join(figures, " "))
}
