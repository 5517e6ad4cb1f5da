package phasefile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPhaseLog: a log nothing is written to is a link to the run's empty
// file (no inode of its own); the first byte gives it a file of its own,
// which the empty file never sees.
func TestPhaseLog(t *testing.T) {
	dir := t.TempDir()
	var el EmptyLogs
	empty := el.Get(dir)
	if empty == "" {
		t.Fatal("no empty log file")
	}
	quiet, err := OpenLog(filepath.Join(dir, "quiet.stdout"), empty)
	if err != nil {
		t.Fatal(err)
	}
	loud, err := OpenLog(filepath.Join(dir, "loud.stdout"), empty)
	if err != nil {
		t.Fatal(err)
	}
	same := func(a, b string) bool {
		sa, err1 := os.Stat(a)
		sb, err2 := os.Stat(b)
		return err1 == nil && err2 == nil && os.SameFile(sa, sb)
	}
	if !same(quiet.path, empty) || !same(loud.path, empty) {
		t.Fatal("fresh logs are not links to the empty file")
	}
	for _, s := range []string{"one\n", "two\n"} {
		if _, err := loud.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := loud.Close(); err != nil {
		t.Fatal(err)
	}
	if err := quiet.Close(); err != nil {
		t.Fatal(err)
	}
	if !quiet.Empty() || loud.Empty() {
		t.Errorf("empty() = %v, %v; want true, false", quiet.Empty(), loud.Empty())
	}
	if b, err := os.ReadFile(loud.path); err != nil || string(b) != "one\ntwo\n" {
		t.Errorf("loud log = %q, %v", b, err)
	}
	for _, p := range []string{empty, quiet.path} {
		if b, err := os.ReadFile(p); err != nil || len(b) != 0 {
			t.Errorf("%s = %q, %v; want empty", p, b, err)
		}
	}
	if same(loud.path, empty) {
		t.Error("the written log still shares the empty file")
	}
	if _, err := loud.Write([]byte("late")); err == nil {
		t.Error("Write after Close succeeded")
	}
	// A leftover at the path (an earlier attempt's log) is replaced.
	again, err := OpenLog(loud.path, empty)
	if err != nil {
		t.Fatal(err)
	}
	if !same(again.path, empty) {
		t.Error("an existing log was not replaced by a link to the empty file")
	}
}
