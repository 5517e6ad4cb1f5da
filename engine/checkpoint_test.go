package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheckpointDirs: a phase's checkpoint directory exists when asked
// for, keeps what an interrupted attempt left, is gone from its path
// after release, and an empty one is reused (renamed) for the next phase
// instead of removing one directory and making another; cleanup leaves
// no spare.
func TestCheckpointDirs(t *testing.T) {
	root := t.TempDir()
	c := &checkpointDirs{dir: filepath.Join(root, "checkpoints")}
	a, b, kept := filepath.Join(c.dir, "a"), filepath.Join(c.dir, "b"), filepath.Join(c.dir, "kept")
	if err := os.MkdirAll(kept, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kept, "progress"), []byte("3"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.make(a); err != nil {
		t.Fatal(err)
	}
	stA, err := os.Stat(a)
	if err != nil || !stA.IsDir() {
		t.Fatalf("checkpoint dir a: %v", err)
	}
	c.release(a)
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Fatalf("a after release: %v", err)
	}
	if err := c.make(b); err != nil {
		t.Fatal(err)
	}
	stB, err := os.Stat(b)
	if err != nil || !os.SameFile(stA, stB) {
		t.Errorf("b is not a's directory reused (%v)", err)
	}
	if ents, _ := os.ReadDir(b); len(ents) != 0 {
		t.Errorf("b is not empty: %v", ents)
	}
	// A directory kept from an interrupted attempt stays as it was.
	c.release(b)
	if err := c.make(kept); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(kept, "progress")); err != nil || string(got) != "3" {
		t.Errorf("kept checkpoint: %q, %v", got, err)
	}
	// A directory with something in it is removed, not kept as a spare.
	c.release(kept)
	if _, err := os.Stat(kept); !os.IsNotExist(err) {
		t.Errorf("kept after release: %v", err)
	}
	c.cleanup()
	if ents, err := os.ReadDir(c.dir); err != nil || len(ents) != 0 {
		t.Errorf("after cleanup %s holds %v (%v)", c.dir, ents, err)
	}
}
