package workspace

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
	c := &Checkpoints{Dir: filepath.Join(root, "checkpoints")}
	a, b, kept := filepath.Join(c.Dir, "a"), filepath.Join(c.Dir, "b"), filepath.Join(c.Dir, "kept")
	if err := os.MkdirAll(kept, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kept, "progress"), []byte("3"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Make(a); err != nil {
		t.Fatal(err)
	}
	stA, err := os.Stat(a)
	if err != nil || !stA.IsDir() {
		t.Fatalf("checkpoint dir a: %v", err)
	}
	c.Release(a)
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Fatalf("a after release: %v", err)
	}
	if err := c.Make(b); err != nil {
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
	c.Release(b)
	if err := c.Make(kept); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(kept, "progress")); err != nil || string(got) != "3" {
		t.Errorf("kept checkpoint: %q, %v", got, err)
	}
	// A directory with something in it is removed, not kept as a spare.
	c.Release(kept)
	if _, err := os.Stat(kept); !os.IsNotExist(err) {
		t.Errorf("kept after release: %v", err)
	}
	c.Cleanup()
	if ents, err := os.ReadDir(c.Dir); err != nil || len(ents) != 0 {
		t.Errorf("after cleanup %s holds %v (%v)", c.Dir, ents, err)
	}
}
