package cache

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// putSample stores sampleEntry's blobs and returns the entry.
func putSample(t *testing.T, c *Dir) *Entry {
	t.Helper()
	for _, b := range sampleBlobs() {
		if _, err := c.PutBytes(b); err != nil {
			t.Fatal(err)
		}
	}
	return sampleEntry()
}

func TestPutGetEntry(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	e := putSample(t, c)
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetEntry(e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("GetEntry (-want +got):\n%s", diff)
	}
	st, err := os.Stat(c.entryPath(e.Key))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o222 != 0 {
		t.Errorf("entry mode %v, want read-only", st.Mode())
	}
	assertNoTemps(t, c)
}

// TestInlineEntryNeedsNoBlobs: an entry that holds its small blobs inline
// is stored and read back although cas/ has none of them, and the blobs
// it does not hold must still be there.
func TestInlineEntryNeedsNoBlobs(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	e := sampleInlineEntry() // weights and stdout inline; metrics.json (empty) and stderr in cas/
	if err := c.PutEntry(e); !errors.Is(err, ErrNotFound) {
		t.Fatalf("PutEntry without the blobs it does not hold = %v, want ErrNotFound", err)
	}
	for _, b := range [][]byte{nil, []byte("stderr")} {
		if _, err := c.PutBytes(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{[]byte("weights"), []byte("stdout")} {
		if c.HasBlob(HashBytes(b)) {
			t.Errorf("cas/ holds %q, which the entry holds inline", b)
		}
	}
	got, err := c.GetEntry(e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("GetEntry (-want +got):\n%s", diff)
	}
	b, err := c.ReadEntryBlob(got, got.Stdout)
	if err != nil || string(b) != "stdout" {
		t.Errorf("ReadEntryBlob(stdout) = %q, %v", b, err)
	}
	if b, err = c.ReadEntryBlob(got, got.Stderr); err != nil || string(b) != "stderr" {
		t.Errorf("ReadEntryBlob(stderr) = %q, %v", b, err)
	}
	tampered := *got
	tampered.Inline = []InlineBlob{got.Inline[0], {Digest: got.Stdout, Data: []byte("forged")}}
	if b, err = c.ReadEntryBlob(&tampered, got.Stdout); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ReadEntryBlob of tampered inline content = %q, %v; want ErrCorrupt", b, err)
	}
	rep, err := c.Verify(VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ExitCode() != 0 || len(rep.Problems) != 0 || rep.Entries != 1 || rep.Blobs != 2 {
		t.Errorf("Verify of a cache with an inline entry: %+v, want 1 entry, 2 blobs, no problems", rep)
	}
	if q := listDir(t, filepath.Join(c.Root(), QuarantineDir)); len(q) != 0 {
		t.Errorf("quarantine/ holds %q", q)
	}
}

func TestGetEntryNotFound(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	if _, err := c.GetEntry(ComputeKey(nil)); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) {
		t.Errorf("GetEntry = %v, want ErrNotFound", err)
	}
}

func TestPutEntryMissingBlob(t *testing.T) {
	t.Parallel()
	for name, blank := range map[string]func(e *Entry){
		"output": func(e *Entry) { e.Outputs[1].Digest = HashBytes([]byte("absent")) },
		"stdout": func(e *Entry) { e.Stdout = HashBytes([]byte("absent")) },
		"stderr": func(e *Entry) { e.Stderr = HashBytes([]byte("absent")) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newDir(t)
			e := putSample(t, c)
			blank(e)
			if err := c.PutEntry(e); !errors.Is(err, ErrNotFound) {
				t.Fatalf("PutEntry = %v, want ErrNotFound", err)
			}
			if _, err := os.Stat(c.entryPath(e.Key)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("entry written despite a missing blob: %v", err)
			}
			assertNoTemps(t, c)
		})
	}
}

func TestPutEntryInvalid(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	e := putSample(t, c)
	e.Outputs[1].Path = "../escape"
	if err := c.PutEntry(e); err == nil {
		t.Fatal("PutEntry accepted a path outside the workspace")
	}
	assertNoTemps(t, c)
}

func TestPutEntryWriteOnce(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	first := putSample(t, c)
	if err := c.PutEntry(first); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(c.entryPath(first.Key))
	second := putSample(t, c)
	second.DurationMS = 1 // same key, different result
	second.Host = "other"
	if err := c.PutEntry(second); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(c.entryPath(first.Key))
	if !os.SameFile(before, after) {
		t.Error("second PutEntry replaced the entry file")
	}
	if n := after.Sys().(*syscall.Stat_t).Nlink; n != 1 {
		t.Errorf("entry has %d links, want 1", n)
	}
	got, err := c.GetEntry(first.Key)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, got); diff != "" {
		t.Errorf("first writer should win (-want +got):\n%s", diff)
	}
	assertNoTemps(t, c)
}

func TestPutEntryConcurrent(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	e := putSample(t, c)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			e := sampleEntry()
			e.DurationMS = int64(i)
			errs[i] = c.PutEntry(e)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("PutEntry %d: %v", i, err)
		}
	}
	if _, err := c.GetEntry(e.Key); err != nil {
		t.Error(err)
	}
	assertNoTemps(t, c)
}

func TestGetEntryCorrupt(t *testing.T) {
	t.Parallel()
	tests := map[string]func(t *testing.T, c *Dir, p string){
		"truncated": func(t *testing.T, c *Dir, p string) {
			os.Chmod(p, 0o644)
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-20)
		},
		"bad checksum": func(t *testing.T, c *Dir, p string) { corruptFile(t, p, int64(len(entryHeader)+5)) },
		"body bit flip": func(t *testing.T, c *Dir, p string) {
			st, _ := os.Stat(p)
			corruptFile(t, p, st.Size()-10)
		},
		"empty file": func(t *testing.T, c *Dir, p string) { os.Chmod(p, 0o644); os.Truncate(p, 0) },
		"path traversal": func(t *testing.T, c *Dir, p string) {
			e := sampleEntry()
			e.Outputs[1].Path = "../x"
			replaceFile(t, p, encodeUnchecked(t, e))
		},
		"absolute path": func(t *testing.T, c *Dir, p string) {
			e := sampleEntry()
			e.Outputs[1].Path = "/abs"
			replaceFile(t, p, encodeUnchecked(t, e))
		},
		"wrong key": func(t *testing.T, c *Dir, p string) {
			e := sampleEntry()
			e.Components = e.Components[:1]
			e.Key = ComputeKey(e.Components)
			b, err := EncodeEntry(e)
			if err != nil {
				t.Fatal(err)
			}
			replaceFile(t, p, b)
		},
		"dangling blob": func(t *testing.T, c *Dir, p string) {
			os.Remove(c.blobPath(HashBytes([]byte("weights")), false))
		},
	}
	for name, damage := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newDir(t)
			e := putSample(t, c)
			if err := c.PutEntry(e); err != nil {
				t.Fatal(err)
			}
			p := c.entryPath(e.Key)
			damage(t, c, p)

			_, err := c.GetEntry(e.Key)
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("GetEntry = %v, want a *CorruptError", err)
			}
			if ce.Kind != "entry" || ce.ID != e.Key.String() || ce.Moved == "" {
				t.Errorf("CorruptError = %+v", ce)
			}
			if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("corrupt entry still in place: %v", err)
			}
			if _, err := c.GetEntry(e.Key); !errors.Is(err, ErrNotFound) {
				t.Errorf("second GetEntry = %v, want ErrNotFound", err)
			}
			// The cache heals: the next run stores its result.
			e = putSample(t, c)
			if err := c.PutEntry(e); err != nil {
				t.Fatal(err)
			}
			if _, err := c.GetEntry(e.Key); err != nil {
				t.Errorf("GetEntry after re-put: %v", err)
			}
		})
	}
}

func TestPutEntryReplacesCorrupt(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	e := putSample(t, c)
	p := c.entryPath(e.Key)
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("cairn-ac 1\ngarbage"), 0o444)
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetEntry(e.Key); err != nil {
		t.Errorf("GetEntry after PutEntry over a corrupt entry: %v", err)
	}
	if q := listDir(t, filepath.Join(c.Root(), QuarantineDir)); len(q) != 1 {
		t.Errorf("quarantine/ holds %q, want the corrupt entry", q)
	}
}

func TestGetEntryNewerFormat(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	e := putSample(t, c)
	p := c.entryPath(e.Key)
	os.MkdirAll(filepath.Dir(p), 0o755)
	newer := []byte("cairn-ac 7\nsomething we cannot read\n")
	os.WriteFile(p, newer, 0o444)
	if _, err := c.GetEntry(e.Key); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) {
		t.Errorf("GetEntry = %v, want ErrNotFound", err)
	}
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != string(newer) {
		t.Errorf("newer-format entry was replaced or moved")
	}
}

// replaceFile rewrites a read-only cache object in place.
func replaceFile(t *testing.T, p string, b []byte) {
	t.Helper()
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGetEntrySymlink(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	e := putSample(t, c)
	good, err := EncodeEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := writeFile(t, good)
	p := c.entryPath(e.Key)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.Symlink(elsewhere, p); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetEntry(e.Key); !errors.Is(err, ErrCorrupt) {
		t.Errorf("GetEntry through a symlink = %v, want ErrCorrupt", err)
	}
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() {
		t.Errorf("entry after PutEntry: %v, %v; want a regular file", st, err)
	}
}
