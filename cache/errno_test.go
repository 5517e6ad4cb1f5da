package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-run/cairn/internal/fsx"
	"github.com/cairn-run/cairn/internal/fsx/fsxtest"
)

// errnoWorkload stores what one phase result needs: a small blob, a large
// compressible file streamed in many writes, an incompressible one, and
// the entry referencing them.
type errnoWorkload struct {
	small, text, random []byte
	textPath, randPath  string
}

func newErrnoWorkload(t *testing.T, dir string) *errnoWorkload {
	w := &errnoWorkload{
		small:  []byte("metrics: loss=0.12\n"),
		text:   textBytes(1 << 20),
		random: randomBytes(t, 300<<10),
	}
	w.textPath = filepath.Join(dir, "log.txt")
	w.randPath = filepath.Join(dir, "weights.bin")
	if err := os.WriteFile(w.textPath, w.text, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.randPath, w.random, 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *errnoWorkload) entry() *Entry {
	e := testEntry("errno sweep", HashBytes(w.small), HashBytes(w.text), HashBytes(w.random))
	e.Outputs[0].Size, e.Outputs[1].Size, e.Outputs[2].Size = int64(len(w.small)), int64(len(w.text)), int64(len(w.random))
	return e
}

// run stores the workload and returns the first error.
func (w *errnoWorkload) run(c *Dir) error {
	if _, err := c.PutBytes(w.small); err != nil {
		return err
	}
	if _, _, err := c.PutFile(w.textPath); err != nil {
		return err
	}
	if _, _, err := c.PutFile(w.randPath); err != nil {
		return err
	}
	return c.PutEntry(w.entry())
}

// TestErrnoSweep is RELIABILITY.md T15: every call of every operation of
// the write protocol (open, write, chmod, fsync, close, mkdir, link,
// remove, directory fsync) fails in turn with EIO, ENOSPC, EACCES and
// EROFS. The put either succeeds (the failed call was a cleanup) or fails
// with an error naming the errno; no partial object is ever visible
// (Verify is clean, objects read back whole), no temp file is left behind
// unless removing it was the failed call, and the same put succeeds once
// the fault is gone.
func TestErrnoSweep(t *testing.T) {
	began := time.Now()
	scratch := scratchDir(t)
	w := newErrnoWorkload(t, t.TempDir())
	errnos := []syscall.Errno{syscall.EIO, syscall.ENOSPC, syscall.EACCES, syscall.EROFS}

	// The golden run counts the calls of each operation.
	count := &fsxtest.Fault{Base: fsx.OS{}}
	golden, err := Open(filepath.Join(scratch, "golden"))
	if err != nil {
		t.Fatal(err)
	}
	restore := fsx.Set(count)
	err = w.run(golden)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, op := range fsxtest.Ops {
		calls = append(calls, fmt.Sprintf("%s=%d", op, count.Calls(op)))
	}
	t.Logf("protocol calls: %s", strings.Join(calls, " "))

	n, failed, succeeded, tempsLeft := 0, 0, 0, 0
	for _, op := range fsxtest.Ops {
		for k := 1; k <= count.Calls(op); k++ {
			for _, errno := range errnos {
				n++
				name := fmt.Sprintf("%s#%d=%s", op, k, errno)
				root := filepath.Join(scratch, fmt.Sprint(n))
				c, err := Open(root)
				if err != nil {
					t.Fatal(err)
				}
				f := &fsxtest.Fault{Base: fsx.OS{}, Op: op, N: k, Err: errno}
				restore := fsx.Set(f)
				err = w.run(c)
				restore()
				if f.Fired() != 1 {
					t.Fatalf("%s: the fault fired %d times, want 1 (the protocol is not deterministic?)", name, f.Fired())
				}
				switch {
				case err == nil:
					succeeded++
				case !errors.Is(err, errno) || !strings.Contains(err.Error(), errno.Error()):
					t.Errorf("%s: error %q does not say what failed", name, err)
				default:
					failed++
				}
				c.Close() // the process is done: its pack goes
				temps, _ := os.ReadDir(filepath.Join(root, TempDir))
				if len(temps) > 0 && !(op == fsxtest.OpRemove || (op == fsxtest.OpClose && err == nil)) {
					t.Errorf("%s: %d temp files left behind (%s)", name, len(temps), temps[0].Name())
				}
				tempsLeft += len(temps)
				if msg := cleanCache(c); msg != "" {
					t.Errorf("%s: after the failure: %s", name, msg)
				}
				// The fault is gone: the same put succeeds.
				if err := w.run(c); err != nil {
					t.Errorf("%s: the put after the fault failed: %v", name, err)
				} else if msg := cleanCache(c); msg != "" {
					t.Errorf("%s: after the retry: %s", name, msg)
				} else if _, err := c.GetLocalEntry(w.entry().Key); err != nil {
					t.Errorf("%s: after the retry: %v", name, err)
				}
				os.RemoveAll(root)
			}
		}
	}
	t.Logf("FIGURE T15 combinations=%d failed_cleanly=%d succeeded=%d partial_objects=0 temps_left=%d wall=%.1fs",
		n, failed, succeeded, tempsLeft, time.Since(began).Seconds())
}

// cleanCache returns what Verify finds wrong with c, or "".
func cleanCache(c *Dir) string {
	rep, err := c.Verify(VerifyOptions{})
	if err != nil {
		return err.Error()
	}
	var bad []string
	for _, p := range rep.Problems {
		bad = append(bad, fmt.Sprintf("%s %s %s: %s", p.Class, p.Kind, p.ID, p.Cause))
	}
	return strings.Join(bad, "; ")
}
