package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/upkeep"
	"github.com/cairn-run/cairn/internal/testkit"
)

// Helpers of the reliability tests that drive the cairn binary: the test
// binary itself, which testscript.Main (TestMain) put on $PATH as "cairn".

// relWS is a workspace with its own cache for one reliability test.
type relWS struct {
	t     *testing.T
	dir   string
	cache string
}

// newRelWS writes spec into a new workspace; extra files are NAME, TEXT
// pairs.
func newRelWS(t *testing.T, spec string, extra ...string) *relWS {
	t.Helper()
	root := t.TempDir()
	w := &relWS{t: t, dir: filepath.Join(root, "ws"), cache: filepath.Join(root, "cache")}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w.write("experiment.hcl", spec)
	for i := 0; i+1 < len(extra); i += 2 {
		w.write(extra[i], extra[i+1])
	}
	t.Cleanup(func() { killWorkspaceProcs(w.dir) })
	return w
}

func (w *relWS) path(name string) string { return filepath.Join(w.dir, name) }

func (w *relWS) write(name, text string) {
	w.t.Helper()
	if err := os.MkdirAll(filepath.Dir(w.path(name)), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(w.path(name), []byte(text), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func (w *relWS) read(name string) string {
	w.t.Helper()
	b, err := os.ReadFile(w.path(name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		w.t.Fatal(err)
	}
	return string(b)
}

// cmd returns cairn ARGS in the workspace, its output in out. The cairn
// process leads its own process group, as a shell starts it, so that a
// test can signal the whole group as a terminal does.
func (w *relWS) cmd(out *bytes.Buffer, args ...string) *exec.Cmd {
	cmd := exec.Command("cairn", args...)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), "CAIRN_CACHE_DIR="+w.cache, "NO_COLOR=1")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// run runs cairn ARGS to the end and returns its exit code and output.
func (w *relWS) run(args ...string) (int, string) {
	w.t.Helper()
	var out bytes.Buffer
	err := w.cmd(&out, args...).Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	w.t.Fatalf("cairn %s: %v", strings.Join(args, " "), err)
	return 0, ""
}

// mustRun runs cairn ARGS and fails the test unless it exits 0.
func (w *relWS) mustRun(args ...string) string {
	w.t.Helper()
	code, out := w.run(args...)
	if code != 0 {
		w.t.Fatalf("cairn %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// relState is the part of state.json the reliability tests read.
type relState struct {
	RunID      string    `json:"run_id"`
	Status     string    `json:"status"`
	StopReason string    `json:"stop_reason"`
	Started    time.Time `json:"started"`
	Phases     map[string]struct {
		Status     string     `json:"status"`
		Key        string     `json:"key"`
		Error      string     `json:"error"`
		Iterations int64      `json:"iterations"`
		Cost       float64    `json:"cost"`
		Started    *time.Time `json:"started"`
		Ended      *time.Time `json:"ended"`
	} `json:"phases"`
}

// states returns the workspace's run records, oldest first.
func (w *relWS) states() []relState {
	w.t.Helper()
	files, _ := filepath.Glob(w.path(".cairn/runs/*/state.json"))
	var out []relState
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			w.t.Fatal(err)
		}
		var st relState
		if err := json.Unmarshal(b, &st); err != nil {
			w.t.Fatalf("%s: %v", f, err) // written atomically: it always parses
		}
		out = append(out, st)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Started.Before(out[j-1].Started); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// latest returns the latest run record.
func (w *relWS) latest() relState {
	w.t.Helper()
	st := w.states()
	if len(st) == 0 {
		w.t.Fatal("no run recorded")
	}
	return st[len(st)-1]
}

// waitLatest waits until the latest run record satisfies ok.
func (w *relWS) waitLatest(what string, ok func(relState) bool) {
	w.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if st := w.states(); len(st) > 0 && ok(st[len(st)-1]) {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("the run never reached: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFiles waits until every file exists: tests synchronise with phases
// on files they create, never on sleeps.
func (w *relWS) waitFiles(names ...string) {
	w.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for _, n := range names {
		for {
			if _, err := os.Stat(w.path(n)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				w.t.Fatalf("%s was not created", n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// entry returns the cache entry stored for key, or nil if there is none.
func (w *relWS) entry(key string) *cache.Entry {
	w.t.Helper()
	id, err := cache.ParseActionID(key)
	if err != nil {
		w.t.Fatalf("key %q: %v", key, err)
	}
	c, err := cache.Open(w.cache)
	if err != nil {
		w.t.Fatal(err)
	}
	e, err := c.GetEntry(id)
	if errors.Is(err, cache.ErrNotFound) {
		return nil
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return e
}

// verify runs cache.Verify and fails on any problem.
func (w *relWS) verify() *upkeep.VerifyReport {
	w.t.Helper()
	c, err := cache.Open(w.cache)
	if err != nil {
		w.t.Fatal(err)
	}
	rep, err := upkeep.Verify(c, upkeep.VerifyOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, p := range rep.Problems {
		w.t.Errorf("cache verify: %s %s %s: %s", p.Class, p.Kind, p.Path, p.Cause)
	}
	return rep
}

// phaseProcs returns the live processes of the workspace's phases (the
// census, H7): every
// phase process and its descendants carry CAIRN_WORKSPACE.
func (w *relWS) phaseProcs() []string { return testkit.Procs("CAIRN_WORKSPACE=" + w.dir) }

// killWorkspaceProcs SIGKILLs whatever a failed test left running.
func killWorkspaceProcs(dir string) { testkit.KillProcs("CAIRN_WORKSPACE=" + dir) }

// exitCode is the exit code of a finished command's Wait error.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
