package engine

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/outputs"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/workspace"
)

const plantSpec = `
phase "a" {
  command = "write out/a.txt hello"
  outputs = ["out/a.txt"]
}
`

// plantedSetup runs plantSpec once and returns the setup, the run's state
// and phase a's cached entry.
func plantedSetup(t *testing.T) (*setup, *runrec.RunState, *cache.Entry) {
	t.Helper()
	s := newSetup(t, map[string]string{"experiment.hcl": plantSpec})
	res := s.run(t, RunOptions{})
	st, err := runrec.ReadState(filepath.Join(s.dir, ".cairn", "runs", res.RunID, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := cache.ParseActionID(st.Phases["a"].Key)
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.cache.GetEntry(key)
	if err != nil {
		t.Fatal(err)
	}
	return s, st, e
}

// replaceEntry overwrites the stored entry of e.Key with e, well formed and
// with a correct checksum: what a writer to a shared cache can do.
func replaceEntry(t *testing.T, c *cache.Dir, e *cache.Entry) {
	t.Helper()
	b, err := cache.EncodeEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	var path string
	filepath.WalkDir(c.Root(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == e.Key.String() {
			path = p
		}
		return nil
	})
	if path == "" {
		t.Fatalf("entry %s not found under %s", e.Key.Short(), c.Root())
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o444); err != nil {
		t.Fatal(err)
	}
}

// TestPlantedEntryOutsideDeclaredOutputs: an entry stored under a phase's
// real key that lists a path outside the phase's declared outputs (a git
// hook) is refused by run and by checkout; the hook is never written.
func TestPlantedEntryOutsideDeclaredOutputs(t *testing.T) {
	s, st, e := plantedSetup(t)
	hook, err := s.cache.PutBytes([]byte("#!/bin/sh\necho pwned\n"))
	if err != nil {
		t.Fatal(err)
	}
	e.Outputs = append(e.Outputs,
		cache.OutputFile{Path: ".git", Type: cache.TypeDir, Mode: 0o755},
		cache.OutputFile{Path: ".git/hooks", Type: cache.TypeDir, Mode: 0o755},
		cache.OutputFile{Path: ".git/hooks/pre-commit", Type: cache.TypeFile, Mode: 0o755, Digest: hook, Size: 21},
	)
	replaceEntry(t, s.cache, e)
	os.Remove(filepath.Join(s.dir, "out", "a.txt"))

	_, err = outputs.Checkout(workspace.Workspace{Root: s.dir}, tiered(s.cache), st)
	if err == nil || !strings.Contains(err.Error(), `".git"`) {
		t.Errorf("checkout of a planted entry: %v, want an error naming .git", err)
	}
	res := s.run(t, RunOptions{})
	if res.Counts[runrec.StatusSucceeded] != 1 || s.exec.count("a") != 2 {
		t.Errorf("run with a planted entry: counts %v, a ran %d times; want it run again", res.Counts, s.exec.count("a"))
	}
	if _, err := os.Lstat(filepath.Join(s.dir, ".git")); err == nil {
		t.Error("the planted .git/hooks/pre-commit was restored into the workspace")
	}
}

// TestPlantedEntryMissingOutput: an entry that lacks a declared output is
// refused by checkout, which leaves the workspace copy alone.
func TestPlantedEntryMissingOutput(t *testing.T) {
	s, st, e := plantedSetup(t)
	e.Outputs = nil
	var logs []cache.InlineBlob // the inline logs stay; the output's blob goes
	for _, b := range e.Inline {
		if b.Digest == e.Stdout || b.Digest == e.Stderr {
			logs = append(logs, b)
		}
	}
	e.Inline = logs
	replaceEntry(t, s.cache, e)
	p := filepath.Join(s.dir, "out", "a.txt")
	os.WriteFile(p, []byte("mine\n"), 0o644)
	if _, err := outputs.Checkout(workspace.Workspace{Root: s.dir}, tiered(s.cache), st); err == nil || !strings.Contains(err.Error(), `"out/a.txt"`) {
		t.Errorf("checkout: %v, want an error naming out/a.txt", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "mine\n" {
		t.Errorf("out/a.txt = %q after a refused checkout", b)
	}
}

// TestRestoreThroughWorkspaceSymlink: the output's directory replaced by a
// symlink to a directory outside the workspace; restoring (checkout) must
// fail rather than delete or write there.
func TestRestoreThroughWorkspaceSymlink(t *testing.T) {
	s, st, _ := plantedSetup(t)
	outside := t.TempDir()
	victim := filepath.Join(outside, "a.txt")
	os.WriteFile(victim, []byte("outside\n"), 0o644)
	out := filepath.Join(s.dir, "out")
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, out); err != nil {
		t.Fatal(err)
	}
	_, err := outputs.Checkout(workspace.Workspace{Root: s.dir}, tiered(s.cache), st)
	if err == nil {
		t.Error("checkout through a symlink leaving the workspace succeeded")
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "outside\n" {
		t.Errorf("file outside the workspace: %q, %v; want it untouched", b, err)
	}
	if names, _ := os.ReadDir(outside); len(names) != 1 {
		t.Errorf("outside directory holds %d entries, want 1", len(names))
	}
}

// TestStaleOutputBehindSymlinkLeavingWorkspace: the parent of a declared
// output is the user's own symlink to a directory outside the workspace.
// Removing the stale output before the phase runs treats it as the
// restore does: nothing outside the workspace is deleted or written, and
// the phase fails saying which parent is the symlink. Whether or not the
// cache holds the phase's result (then the restore is refused first).
func TestStaleOutputBehindSymlinkLeavingWorkspace(t *testing.T) {
	for _, cached := range []bool{false, true} {
		t.Run(map[bool]string{false: "new", true: "cached"}[cached], func(t *testing.T) {
			s := newSetup(t, map[string]string{"experiment.hcl": plantSpec})
			if cached {
				s.run(t, RunOptions{})
				if err := os.RemoveAll(filepath.Join(s.dir, "out")); err != nil {
					t.Fatal(err)
				}
			}
			elsewhere := t.TempDir()
			precious := filepath.Join(elsewhere, "a.txt")
			if err := os.WriteFile(precious, []byte("not cairn's\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, filepath.Join(s.dir, "out")); err != nil {
				t.Fatal(err)
			}
			ran := s.exec.count("a")
			res := s.run(t, RunOptions{})
			if b, err := os.ReadFile(precious); err != nil || string(b) != "not cairn's\n" {
				t.Errorf("%s outside the workspace: %q, %v; want it untouched", precious, b, err)
			}
			if res.Status != runrec.RunFailed {
				t.Errorf("run status %s, want %s", res.Status, runrec.RunFailed)
			}
			err := res.Failures["a"]
			if err == nil || !strings.Contains(err.Error(), `"out" is a symlink`) || !strings.Contains(err.Error(), "outside the workspace") {
				t.Errorf("phase a's error = %v, want one saying out is a symlink leading outside the workspace", err)
			}
			if n := s.exec.count("a") - ran; n != 0 {
				t.Errorf("phase a's command ran %d times, want none", n)
			}
		})
	}
}

// TestSymlinkChainLeavingWorkspaceNotStored: out/d/l2 -> ../.. and
// out/d/l1 -> l2/.. each stay inside the workspace lexically, but l1
// resolves, through l2, to the workspace's parent. The phase fails naming
// l1 and nothing is cached (the next run runs it again); an honest chain
// (out/latest -> cur/.., cur -> v2) is stored and restored.
func TestSymlinkChainLeavingWorkspaceNotStored(t *testing.T) {
	const spec = `
phase "a" {
  command = "mkdir out/d; ln ../.. out/d/l2; ln l2/.. out/d/l1"
  outputs = ["out"]
}
`
	s := newSetup(t, map[string]string{"experiment.hcl": spec})
	for run := 1; run <= 2; run++ {
		res := s.run(t, RunOptions{})
		err := res.Failures["a"]
		if res.Status != runrec.RunFailed || err == nil || !strings.Contains(err.Error(), "out/d/l1") || !strings.Contains(err.Error(), "outside the workspace") {
			t.Errorf("run %d: status %s, phase a's error %v; want a failure naming out/d/l1 as leading outside the workspace", run, res.Status, err)
		}
		if n := s.exec.count("a"); n != run {
			t.Errorf("run %d: phase a ran %d times, want %d (nothing cached)", run, n, run)
		}
	}

	const honest = `
phase "a" {
  command = "mkdir out/v2/x; ln v2/x out/cur; ln cur/.. out/latest; write out/v2/f hi"
  outputs = ["out"]
}
`
	h := newSetup(t, map[string]string{"experiment.hcl": honest})
	if res := h.run(t, RunOptions{}); res.Status != runrec.RunSucceeded {
		t.Fatalf("honest chain: run %s: %v", res.Status, res.Failures)
	}
	if err := os.RemoveAll(filepath.Join(h.dir, "out")); err != nil {
		t.Fatal(err)
	}
	h.run(t, RunOptions{})
	if b, err := os.ReadFile(filepath.Join(h.dir, "out", "latest", "f")); err != nil || string(b) != "hi\n" {
		t.Errorf("out/latest/f after restore: %q, %v; want \"hi\\n\"", b, err)
	}
	if n := h.exec.count("a"); n != 1 {
		t.Errorf("honest chain: phase a ran %d times, want once", n)
	}
}
