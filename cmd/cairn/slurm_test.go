package main

// Integration tests of the Slurm executor against a real Slurm cluster
// (scripts/slurm-setup.sh starts a single-node one). They run the cairn
// binary as a user does, with the Slurm commands on PATH wrapped so that
// every call cairn makes to Slurm is counted.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needSlurm skips the test when no Slurm cluster answers, unless
// CAIRN_REQUIRE_SERVICES is set (CI), where it fails instead.
func needSlurm(t *testing.T) {
	t.Helper()
	why := ""
	if _, err := exec.LookPath("sbatch"); err != nil {
		why = "sbatch is not on PATH"
	} else if out, err := exec.Command("sinfo", "-h", "-o", "%T").CombinedOutput(); err != nil {
		why = fmt.Sprintf("sinfo failed: %v: %s", err, bytes.TrimSpace(out))
	}
	if why == "" {
		return
	}
	if os.Getenv("CAIRN_REQUIRE_SERVICES") != "" {
		t.Fatalf("Slurm is required (CAIRN_REQUIRE_SERVICES is set) but %s: run scripts/slurm-setup.sh", why)
	}
	t.Skipf("no Slurm cluster (%s); scripts/slurm-setup.sh starts one", why)
}

func longTier() bool { return os.Getenv("CAIRN_LONG") != "" }

// slurmHarness runs the cairn binary with counting wrappers of the Slurm
// commands first on PATH.
type slurmHarness struct {
	t     *testing.T
	bin   string
	wrap  string // directory of the wrappers
	calls string // one line per Slurm command cairn ran: its name
	cache string
	env   []string
}

func newSlurmHarness(t *testing.T, bin string) *slurmHarness {
	dir := t.TempDir()
	h := &slurmHarness{t: t, bin: bin, wrap: filepath.Join(dir, "bin"), calls: filepath.Join(dir, "calls.log"), cache: filepath.Join(dir, "cache")}
	if err := os.MkdirAll(h.wrap, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sbatch", "squeue", "scontrol", "scancel"} {
		h.wrapCommand(name, "")
	}
	h.env = append(os.Environ(),
		"PATH="+h.wrap+string(os.PathListSeparator)+os.Getenv("PATH"),
		"CAIRN_CACHE_DIR="+h.cache,
		"NO_COLOR=1",
		// Quick enough to see a time limit or a cancel within a second or
		// two; still one query for all jobs.
		"CAIRN_SLURM_POLL_MIN=500ms",
		"CAIRN_SLURM_POLL_MAX=2s",
	)
	return h
}

// wrapCommand puts a wrapper of a Slurm command first on PATH: it records
// the call, runs pre (shell code; it may exit), then the real command.
// The path of the log is written into the wrapper: sbatch runs with the
// phase's clean environment.
func (h *slurmHarness) wrapCommand(name, pre string) {
	h.t.Helper()
	real, err := exec.LookPath(name)
	if err != nil {
		h.t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\necho %s >> %s\n%s\nexec %s \"$@\"\n", name, shellQuoteT(h.calls), pre, shellQuoteT(real))
	if err := os.WriteFile(filepath.Join(h.wrap, name), []byte(script), 0o755); err != nil {
		h.t.Fatal(err)
	}
}

func shellQuoteT(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// count returns how many times cairn ran a Slurm command.
func (h *slurmHarness) count(name string) int {
	b, _ := os.ReadFile(h.calls)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if l == name {
			n++
		}
	}
	return n
}

func (h *slurmHarness) command(ws string, args ...string) *exec.Cmd {
	cmd := exec.Command(h.bin, args...)
	cmd.Dir = ws
	cmd.Env = h.env
	return cmd
}

// run runs cairn to its end and returns its combined output and exit code.
func (h *slurmHarness) run(ws string, args ...string) (string, int) {
	h.t.Helper()
	out, err := h.command(ws, args...).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("cairn %s: %v", strings.Join(args, " "), err)
	}
	return string(out), code
}

func (h *slurmHarness) mustRun(ws string, args ...string) string {
	h.t.Helper()
	out, code := h.run(ws, args...)
	if code != 0 {
		h.t.Fatalf("cairn %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// start starts cairn in the background; its output goes to a buffer.
func (h *slurmHarness) start(ws string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	h.t.Helper()
	cmd := h.command(ws, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &out
}

// waitFile waits until a file exists (a phase creates it), bounded.
func waitFile(t *testing.T, path string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not there after %s", path, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitExit waits for a background cairn, bounded, and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, out *bytes.Buffer, timeout time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("cairn did not end within %s; output:\n%s", timeout, out.String())
		return -1
	}
}

type slurmPhaseState struct {
	Status  string `json:"status"`
	Error   string `json:"error"`
	JobID   string `json:"job_id"`
	JobDir  string `json:"job_dir"`
	Attempt int    `json:"attempts"`
}

type slurmRunState struct {
	RunID   string                     `json:"run_id"`
	Status  string                     `json:"status"`
	Started time.Time                  `json:"started"`
	Phases  map[string]slurmPhaseState `json:"phases"`
}

// runStates returns the workspace's runs, oldest first.
func slurmRuns(t *testing.T, ws string) []slurmRunState {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(ws, ".cairn", "runs", "*", "state.json"))
	var out []slurmRunState
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var st slurmRunState
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

func lastRun(t *testing.T, ws string) slurmRunState {
	t.Helper()
	runs := slurmRuns(t, ws)
	if len(runs) == 0 {
		t.Fatalf("no run recorded in %s", ws)
	}
	return runs[len(runs)-1]
}

// queued returns which of the job ids Slurm still has queued or running.
func queued(t *testing.T, ids []string) []string {
	t.Helper()
	if len(ids) == 0 {
		return nil
	}
	out, err := exec.Command("squeue", "-h", "-t", "PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED", "-j", strings.Join(ids, ","), "-o", "%i").Output()
	if err != nil {
		// squeue exits 1 for one id it no longer knows: not queued.
		return nil
	}
	return strings.Fields(string(out))
}

func writeWorkspace(t *testing.T, files map[string]string) string {
	t.Helper()
	ws := t.TempDir()
	// A failed test leaves no job behind to hold the cluster's CPUs.
	t.Cleanup(func() { cancelJobs(t, ws) })
	for name, content := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// cancelJobs cancels every job the runs of a workspace recorded.
func cancelJobs(t *testing.T, ws string) {
	var ids []string
	for _, st := range slurmRuns(t, ws) {
		for _, ps := range st.Phases {
			if ps.JobID != "" {
				ids = append(ids, ps.JobID)
			}
		}
	}
	if q := queued(t, ids); len(q) > 0 {
		_ = exec.Command("scancel", q...).Run()
	}
}

// copyTree copies a directory (the quickstart example).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == ".cairn" || d.Name() == "out" && rel == "out" || d.Name() == "data" && rel == "data" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// workspaceFiles returns the content of every file under the given
// directories of a workspace, by path.
func workspaceFiles(t *testing.T, ws string, dirs ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, d := range dirs {
		_ = filepath.WalkDir(filepath.Join(ws, d), func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(ws, p)
			m[rel] = string(b)
			return nil
		})
	}
	return m
}

// TestSlurm runs the Slurm executor's integration tests on one cairn
// binary. The subtests run in parallel: most of their time is spent
// waiting for Slurm.
func TestSlurm(t *testing.T) {
	needSlurm(t)
	bin := buildCairn(t)
	t.Run("Quickstart", func(t *testing.T) { t.Parallel(); testSlurmQuickstart(t, bin) })
	t.Run("Failure", func(t *testing.T) { t.Parallel(); testSlurmFailure(t, bin) })
	t.Run("StopCancel", func(t *testing.T) { t.Parallel(); testSlurmStopCancel(t, bin) })
	t.Run("KillAdopt", func(t *testing.T) { t.Parallel(); testSlurmKillAdopt(t, bin) })
	t.Run("SubmitRetry", func(t *testing.T) { t.Parallel(); testSlurmSubmitRetry(t, bin) })
	t.Run("TimeLimit", func(t *testing.T) { t.Parallel(); testSlurmTimeLimit(t, bin) })
	if longTier() {
		t.Run("Sweep", func(t *testing.T) { testSlurmSweep(t, bin) })
	}
}

// The quickstart experiment with every phase on Slurm gives the same bytes
// as the local run, its logs included, and is fully cached on the rerun.
func testSlurmQuickstart(t *testing.T, bin string) {
	h := newSlurmHarness(t, bin)
	local, onSlurm := t.TempDir(), t.TempDir()
	copyTree(t, "../../examples/quickstart", local)
	copyTree(t, "../../examples/quickstart", onSlurm)

	h.mustRun(local, "run")
	if n := h.count("sbatch"); n != 0 {
		t.Fatalf("the local run called sbatch %d times", n)
	}
	// A separate cache: the Slurm run must compute everything itself.
	hs := newSlurmHarness(t, bin)
	start := time.Now()
	out := hs.mustRun(onSlurm, "run", "--executor", "slurm")
	wall := time.Since(start)
	if !strings.Contains(out, "5 ran, 0 cached") {
		t.Fatalf("the Slurm run did not run all five phases:\n%s", out)
	}
	if n := hs.count("sbatch"); n != 5 {
		t.Fatalf("sbatch called %d times for 5 phases", n)
	}
	lo, so := workspaceFiles(t, local, "out", "data"), workspaceFiles(t, onSlurm, "out", "data")
	if len(lo) == 0 {
		t.Fatal("the local run wrote no outputs")
	}
	for p, want := range lo {
		if so[p] != want {
			t.Errorf("output %s differs between the local and the Slurm run", p)
		}
	}
	for p := range so {
		if _, ok := lo[p]; !ok {
			t.Errorf("the Slurm run wrote %s, the local run did not", p)
		}
	}
	st := lastRun(t, onSlurm)
	for addr, ps := range st.Phases {
		if ps.JobID == "" {
			t.Errorf("phase %s: no Slurm job id in state.json", addr)
		}
		for _, flag := range []string{"--stdout", "--stderr"} {
			a, _ := h.run(local, "logs", flag, addr)
			b, _ := hs.run(onSlurm, "logs", flag, addr)
			if a != b {
				t.Errorf("cairn logs %s %s differs:\nlocal: %q\nslurm: %q", flag, addr, a, b)
			}
		}
	}

	out = hs.mustRun(onSlurm, "run", "--executor", "slurm")
	if !strings.Contains(out, "0 ran, 5 cached") {
		t.Fatalf("the rerun on Slurm was not fully cached:\n%s", out)
	}
	if n := hs.count("sbatch"); n != 5 {
		t.Fatalf("the cached rerun submitted %d jobs", n-5)
	}
	t.Logf("FIGURE SLURM quickstart_phases=5 sbatch=%d status_queries=%d wall=%.1fs",
		hs.count("sbatch"), hs.count("squeue")+hs.count("scontrol"), wall.Seconds())
}

// A failing job blocks its dependents, with Slurm's exit code in the
// error; sbatch refusing a job fails the phase at once with sbatch's
// message; a secret reaches the command through the environment and is
// written into no file. (The spec holds only the secret's length: a
// value written into the spec is in the spec memo, as the spec is.)
func testSlurmFailure(t *testing.T, bin string) {
	h := newSlurmHarness(t, bin)
	const secret = "s3cret-token-7781"
	ws := writeWorkspace(t, map[string]string{"experiment.hcl": `
experiment "failing" {
  executor = "slurm"
}

phase "bad" {
  command = "echo about to fail >&2; exit 3"
  outputs = ["bad.txt"]
}

phase "after" {
  command = "cp ${phase.bad.outputs[0]} after.txt"
  outputs = ["after.txt"]
}

phase "secret" {
  command    = "test \"$${#TOKEN}\" = ` + strconv.Itoa(len(secret)) + ` && echo \"token $TOKEN\" && echo ok > secret.txt"
  secret_env = ["TOKEN"]
  outputs    = ["secret.txt"]
}

phase "refused" {
  command = "echo never > refused.txt"
  outputs = ["refused.txt"]
  slurm {
    partition = "no-such-partition"
  }
}
`})
	h.env = append(h.env, "TOKEN="+secret)
	out, code := h.run(ws, "run", "--keep-going")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d:\n%s", code, exitFailed, out)
	}
	st := lastRun(t, ws)
	bad := st.Phases["bad"]
	if bad.Status != "failed" || !regexp.MustCompile(`exit status 3 \(Slurm job [0-9]+`).MatchString(bad.Error) {
		t.Errorf("bad: status %s, error %q; want failed with Slurm's exit status 3", bad.Status, bad.Error)
	}
	if !strings.Contains(out, "exit status 3 (Slurm job "+bad.JobID) {
		t.Errorf("cairn's output does not name the exit status and the job:\n%s", out)
	}
	if ps := st.Phases["after"]; ps.Status != "blocked" {
		t.Errorf("after: status %s, want blocked", ps.Status)
	}
	if ps := st.Phases["secret"]; ps.Status != "succeeded" {
		t.Errorf("secret: status %s (%s), want succeeded: the command did not see TOKEN", ps.Status, ps.Error)
	}
	ref := st.Phases["refused"]
	if ref.Status != "failed" || !strings.Contains(ref.Error, "sbatch refused the job") || !strings.Contains(ref.Error, "partition") {
		t.Errorf("refused: status %s, error %q; want sbatch's message about the partition", ref.Status, ref.Error)
	}
	// bad, secret and refused: one sbatch each (a refusal is not retried).
	if n := h.count("sbatch"); n != 3 {
		t.Errorf("sbatch called %d times, want 3", n)
	}
	// The secret is in no file cairn wrote: not the batch script, not the
	// logs (masked), not the state.
	_ = filepath.WalkDir(filepath.Join(ws, ".cairn"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret", p)
		}
		return nil
	})
	logs, _ := h.run(ws, "logs", "secret")
	if !strings.Contains(logs, "token ***") {
		t.Errorf("cairn logs secret: %q", logs)
	}
	errLog, _ := h.run(ws, "logs", "--stderr", "bad")
	if !strings.Contains(errLog, "about to fail") {
		t.Errorf("cairn logs --stderr bad lacks the job's stderr: %q", errLog)
	}
}

// cairn stop --cancel ends the run and leaves none of its jobs in the
// queue.
func testSlurmStopCancel(t *testing.T, bin string) {
	h := newSlurmHarness(t, bin)
	ws := writeWorkspace(t, map[string]string{"experiment.hcl": `
phase "long" {
  executor = "slurm"
  command  = "touch started; sleep 300; echo done > long.txt"
  outputs  = ["long.txt"]
}

phase "queued" {
  executor = "slurm"
  command  = "touch started; sleep 300; echo done > queued.txt"
  outputs  = ["queued.txt"]
}

phase "next" {
  executor = "slurm"
  command  = "cat long.txt queued.txt > next.txt"
  inputs   = [phase.long.outputs[0], phase.queued.outputs[0]]
  outputs  = ["next.txt"]
}
`})
	cmd, out := h.start(ws, "run")
	waitFile(t, filepath.Join(ws, "started"), 120*time.Second)
	var ids []string
	deadline := time.Now().Add(30 * time.Second)
	for len(ids) < 2 {
		ids = ids[:0]
		for _, a := range []string{"long", "queued"} {
			if id := lastRun(t, ws).Phases[a].JobID; id != "" {
				ids = append(ids, id)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job ids not recorded in state.json; output:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if q := queued(t, ids); len(q) != 2 {
		t.Fatalf("jobs %v: only %v queued before the stop", ids, q)
	}
	stopOut := h.mustRun(ws, "stop", "--cancel")
	if !strings.Contains(stopOut, "end its running phases") {
		t.Errorf("cairn stop --cancel said: %q", stopOut)
	}
	begin := time.Now()
	if code := waitExit(t, cmd, out, 60*time.Second); code != exitStopped {
		t.Fatalf("cairn exited %d after stop --cancel, want %d:\n%s", code, exitStopped, out)
	}
	took := time.Since(begin)
	if q := queued(t, ids); len(q) != 0 {
		t.Fatalf("jobs %v still queued after cairn stop --cancel", q)
	}
	st := lastRun(t, ws)
	if st.Status != "stopped" {
		t.Errorf("run status %s, want stopped", st.Status)
	}
	for _, a := range []string{"long", "queued"} {
		if s := st.Phases[a].Status; s != "stopped" {
			t.Errorf("%s: status %s, want stopped", a, s)
		}
	}
	if s := st.Phases["next"].Status; s != "skipped" {
		t.Errorf("next: status %s, want skipped", s)
	}
	if n := h.count("scancel"); n != 1 {
		t.Errorf("scancel called %d times for 2 jobs, want 1 (batched)", n)
	}
	t.Logf("FIGURE SLURM stop_cancel_jobs=2 scancel_calls=%d stop_to_exit=%.1fs", h.count("scancel"), took.Seconds())
}

// SIGKILL cairn while its jobs run; the resumed run adopts them (one that
// finished while cairn was dead, one still running) instead of submitting
// them again.
func testSlurmKillAdopt(t *testing.T, bin string) {
	h := newSlurmHarness(t, bin)
	ws := writeWorkspace(t, map[string]string{"experiment.hcl": `
experiment "adopt" {
  executor = "slurm"
}

phase "work" {
  for_each = toset(["a", "b"])
  command  = "echo start >> starts-${each.key}.log; echo hello from ${each.key}; while [ ! -e go-${each.key} ]; do sleep 0.1; done; echo ${each.key} > out-${each.key}.txt"
  outputs  = ["out-${each.key}.txt"]
}

phase "join" {
  command = "cat ${join(" ", [for w in phase.work : w.outputs[0]])} > joined.txt"
  outputs = ["joined.txt"]
}
`})
	cmd, out := h.start(ws, "run")
	// Job a runs; job b runs or waits for a CPU (other tests share the
	// cluster): either way both are submitted and recorded.
	waitFile(t, filepath.Join(ws, "starts-a.log"), 120*time.Second)
	var first slurmRunState
	deadline := time.Now().Add(30 * time.Second)
	for {
		first = lastRun(t, ws)
		if first.Phases[`work["a"]`].JobID != "" && first.Phases[`work["b"]`].JobID != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job ids not in state.json while the jobs run:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	// Job a ends while cairn is dead; job b is still running when the
	// resumed run starts.
	if err := os.WriteFile(filepath.Join(ws, "go-a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(ws, first.Phases[`work["a"]`].JobDir, "exitcode"), 60*time.Second)
	if q := queued(t, []string{first.Phases[`work["b"]`].JobID}); len(q) != 1 {
		t.Fatalf("job b is not queued after cairn died: %v", q)
	}

	res, resOut := h.start(ws, "resume")
	// The resumed run records the job it adopted, then b may end.
	deadline = time.Now().Add(30 * time.Second)
	for {
		st := lastRun(t, ws)
		if st.RunID != first.RunID && st.Phases[`work["b"]`].JobID == first.Phases[`work["b"]`].JobID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resumed run did not adopt job b (%s):\n%s", first.Phases[`work["b"]`].JobID, resOut)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(ws, "go-b"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, res, resOut, 120*time.Second); code != 0 {
		t.Fatalf("resume exited %d:\n%s", code, resOut)
	}
	st := lastRun(t, ws)
	for _, a := range []string{`work["a"]`, `work["b"]`, "join"} {
		if s := st.Phases[a].Status; s != "succeeded" {
			t.Errorf("%s: status %s (%s), want succeeded", a, s, st.Phases[a].Error)
		}
	}
	for _, k := range []string{"a", "b"} {
		b, _ := os.ReadFile(filepath.Join(ws, "starts-"+k+".log"))
		if n := strings.Count(string(b), "start"); n != 1 {
			t.Errorf("phase work[%q] started %d times, want once", k, n)
		}
		logs, _ := h.run(ws, "logs", "--stdout", `work["`+k+`"]`)
		if !strings.Contains(logs, "hello from "+k) {
			t.Errorf("cairn logs of the adopted work[%q]: %q", k, logs)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "joined.txt")); string(b) != "a\nb\n" {
		t.Errorf("joined.txt = %q", b)
	}
	// a, b and join: three submissions over both runs, none twice.
	if n := h.count("sbatch"); n != 3 {
		t.Errorf("sbatch called %d times, want 3 (the resumed run adopts a and b)", n)
	}
	t.Logf("FIGURE SLURM kill_adopt_jobs=2 sbatch=%d (3 expected: a, b, join)", h.count("sbatch"))
}

// Transient sbatch failures are retried with backoff, and a job the
// controller may have taken before the failure is looked up first.
func testSlurmSubmitRetry(t *testing.T, bin string) {
	h := newSlurmHarness(t, bin)
	fails := filepath.Join(t.TempDir(), "fails")
	// The first two calls fail as a busy controller makes them fail.
	h.wrapCommand("sbatch", fmt.Sprintf(`n=$(cat %[1]s 2>/dev/null || echo 0)
if [ "$n" -lt 2 ]; then
  echo $((n + 1)) > %[1]s
  echo "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation" >&2
  exit 1
fi`, shellQuoteT(fails)))
	ws := writeWorkspace(t, map[string]string{"experiment.hcl": `
phase "one" {
  executor = "slurm"
  command  = "echo one > one.txt"
  outputs  = ["one.txt"]
}
`})
	start := time.Now()
	out := h.mustRun(ws, "run")
	if n := h.count("sbatch"); n != 3 {
		t.Errorf("sbatch called %d times, want 3 (two transient failures, then the job)", n)
	}
	if c := strings.Count(out, "Socket timed out"); c != 2 {
		t.Errorf("want two warnings about the retried sbatch, got %d:\n%s", c, out)
	}
	// Before each retry cairn looked the job up by name (squeue -n).
	if n := h.count("squeue"); n < 2 {
		t.Errorf("squeue called %d times; want the job looked up by name before each retry", n)
	}
	t.Logf("FIGURE SLURM submit_retries=2 sbatch=%d wall=%.1fs", h.count("sbatch"), time.Since(start).Seconds())
}

// A job past its Slurm time limit ends timed_out, with Slurm's account.
// Slurm checks limits about every 30 s: a 1-minute limit ends the job
// 60-90 s after it started.
func testSlurmTimeLimit(t *testing.T, bin string) {
	if testing.Short() && os.Getenv("CAIRN_REQUIRE_SERVICES") == "" {
		t.Skip("a Slurm time limit takes 60-90 s to end a job; not in -short")
	}
	h := newSlurmHarness(t, bin)
	ws := writeWorkspace(t, map[string]string{"experiment.hcl": `
phase "slow" {
  executor = "slurm"
  command  = "sleep 600; echo late > slow.txt"
  outputs  = ["slow.txt"]
  slurm {
    time = "1m"
  }
}
`})
	start := time.Now()
	out, code := h.run(ws, "run")
	wall := time.Since(start)
	if code != exitFailed {
		t.Fatalf("exit %d, want %d:\n%s", code, exitFailed, out)
	}
	ps := lastRun(t, ws).Phases["slow"]
	if ps.Status != "timed_out" || !strings.Contains(ps.Error, "TIMEOUT") || !strings.Contains(ps.Error, "time limit") {
		t.Fatalf("slow: status %s, error %q; want timed_out with Slurm's TIMEOUT", ps.Status, ps.Error)
	}
	t.Logf("FIGURE SLURM time_limit=1m timed_out_after=%.0fs status_queries=%d", wall.Seconds(), h.count("squeue")+h.count("scontrol"))
}

// testSlurmSweep measures a 200-instance sweep of trivial phases on the
// local Slurm against the local executor: cairn's status queries and the
// overhead per phase. Long tier (CAIRN_LONG=1): it takes minutes.
func testSlurmSweep(t *testing.T, bin string) {
	n := 200
	if s := os.Getenv("CAIRN_SLURM_SWEEP"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	spec := fmt.Sprintf(`
locals {
  keys = [for i in range(%d) : format("k%%03d", i)]
}

phase "sweep" {
  for_each = toset(local.keys)
  command  = "echo ${each.key} > out/${each.key}.txt"
  outputs  = ["out/${each.key}.txt"]
}
`, n)
	measure := func(executor string) (time.Duration, *slurmHarness) {
		h := newSlurmHarness(t, bin)
		// Production polling (2s-30s), not the tests' quick one.
		var env []string
		for _, kv := range h.env {
			if !strings.HasPrefix(kv, "CAIRN_SLURM_POLL_") {
				env = append(env, kv)
			}
		}
		h.env = env
		ws := writeWorkspace(t, map[string]string{"experiment.hcl": spec})
		if err := os.MkdirAll(filepath.Join(ws, "out"), 0o755); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		out := h.mustRun(ws, "run", "--executor", executor, "-j", "16")
		wall := time.Since(start)
		if !strings.Contains(out, fmt.Sprintf("%d ran, 0 cached", n)) {
			t.Fatalf("%s: not all %d phases ran:\n%s", executor, n, out)
		}
		return wall, h
	}
	localWall, _ := measure("local")
	slurmWall, h := measure("slurm")
	queries := h.count("squeue") + h.count("scontrol")
	perPhase := (slurmWall - localWall) / time.Duration(n)
	t.Logf("FIGURE SLURM sweep_phases=%d jobs_at_once=16 sbatch=%d status_queries=%d local_wall=%.1fs slurm_wall=%.1fs overhead_per_phase=%.0fms",
		n, h.count("sbatch"), queries, localWall.Seconds(), slurmWall.Seconds(), float64(perPhase)/float64(time.Millisecond))
	if h.count("sbatch") != n {
		t.Errorf("sbatch called %d times for %d phases", h.count("sbatch"), n)
	}
	if queries > n/4 {
		t.Errorf("%d status queries for %d jobs: the queries are not batched", queries, n)
	}
}
