package cache

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStageFile: staging hashes a file and keeps small content in memory
// (no temp file, beforeTemp not called) and larger content in one temp
// file (after beforeTemp); nothing is in cas/ until Commit, and Discard
// leaves neither a blob nor a temp file.
func TestStageFile(t *testing.T) {
	t.Parallel()
	for name, tc := range blobCases {
		for _, commit := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "/commit", false: "/discard"}[commit], func(t *testing.T) {
				t.Parallel()
				c := newDir(t)
				content := tc.content(t)
				src := filepath.Join(t.TempDir(), "out")
				if err := os.WriteFile(src, content, 0o644); err != nil {
					t.Fatal(err)
				}
				calls := 0
				b, err := c.StageFile(src, func() { calls++ })
				if err != nil {
					t.Fatal(err)
				}
				if want := HashBytes(content); b.Digest != want || b.Size != int64(len(content)) {
					t.Fatalf("staged %s (%d bytes), want %s (%d)", b.Digest.Short(), b.Size, want.Short(), len(content))
				}
				inMemory := len(content) < sampleSize
				wantTemps := 1
				if inMemory {
					wantTemps = 0
				}
				if got := countTemps(t, c); got != wantTemps || calls != wantTemps {
					t.Errorf("after staging: %d temp files, beforeTemp called %d times; want %d and %d", got, calls, wantTemps, wantTemps)
				}
				empty := len(content) == 0 // the empty blob is created when the cache is
				if c.HasBlob(b.Digest) && !empty {
					t.Errorf("blob present before Commit")
				}
				if commit {
					if err := b.Commit(); err != nil {
						t.Fatal(err)
					}
					got, err := c.ReadBlob(b.Digest)
					if err != nil || string(got) != string(content) {
						t.Errorf("after Commit: ReadBlob = %d bytes, %v; want the content", len(got), err)
					}
				} else {
					b.Discard()
					if c.HasBlob(b.Digest) && !empty {
						t.Errorf("blob present after Discard")
					}
				}
				if got := countTemps(t, c); got != 0 {
					t.Errorf("%d temp files left", got)
				}
			})
		}
	}
}

func countTemps(t *testing.T, c *Dir) int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(c.Root(), TempDir))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(ents)
}
