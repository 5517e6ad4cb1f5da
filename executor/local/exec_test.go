package local

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/internal/testkit"
)

// testMark returns a unique census marker (H7): every process of a test
// job carries CAIRN_TEST_MARK=<mark> in its environment.
func testMark(t *testing.T) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// census returns the live processes carrying CAIRN_TEST_MARK=mark, other
// than this one, as "pid (cmdline)".
func census(mark string) []string { return testkit.Procs("CAIRN_TEST_MARK=" + mark) }

// survivors waits up to d for the marked processes to be gone (a SIGKILLed
// process needs a moment to exit) and returns those still alive then. The
// test's cleanup kills any that are left.
func survivors(t *testing.T, mark string, d time.Duration) []string {
	t.Helper()
	return testkit.WaitGone("CAIRN_TEST_MARK="+mark, d)
}

// killCensus SIGKILLs whatever still carries the marker, so that a failing
// test leaves no sleeper behind.
func killCensus(mark string) { testkit.KillProcs("CAIRN_TEST_MARK=" + mark) }

// waitFile waits until path exists: tests synchronise with a job on files
// it creates, never on sleeps.
func waitFile(t *testing.T, path string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not created within %s", path, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lockedBuffer is a writer that is not an *os.File, so the executor
// copies the job's output through a pipe (as it does when masking secrets
// or teeing output to the terminal).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testJob is a shell job in dir carrying mark and a job marker.
func testJob(dir, mark, script string, stdout, stderr io.Writer) *executor.Job {
	job := &executor.Job{
		Phase:  "p",
		Argv:   []string{"sh", "-c", script},
		Dir:    dir,
		Env:    []string{"PATH=" + os.Getenv("PATH"), "CAIRN_TEST_MARK=" + mark, "CAIRN_JOB=job-" + mark},
		Marker: "job-" + mark,
		Stdout: stdout,
		Stderr: stderr,
	}
	return job
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

// TestTimeoutKillsTree is T20: a job ended by its context (a timeout) is
// killed with its whole tree: children, a subshell ignoring SIGTERM,
// grandchildren that left the process group with setsid (keeping the
// output pipe open), a double fork, and 200 children. The executor
// returns within grace + WaitDelay of the timeout and the census finds no
// survivor.
func TestTimeoutKillsTree(t *testing.T) {
	// A job whose processes die on SIGTERM must be over well within the
	// grace period: nothing, not even a pipe held by an escaped
	// grandchild, may keep the executor waiting. One that ignores
	// SIGTERM is killed when the grace period ends.
	// The bounds leave room for a loaded CI machine; the figures report
	// what was measured.
	const grace, waitDelay, quick = 2 * time.Second, 500 * time.Millisecond, time.Second
	runs := 2
	if longTier() {
		runs = 50
	}
	variants := []struct {
		name   string
		script string
		pipe   bool          // output to a non-file writer: the escapers hold a pipe
		bound  time.Duration // from the timeout to Run's return
	}{
		{"tree", `sleep 300 & (trap "" TERM; sleep 300) & sh -c "sleep 300" & touch ready; wait`, false, quick},
		{"setsid-holds-stdout", `setsid sh -c 'echo $$ > esc.pid; exec sleep 300' & while [ ! -s esc.pid ]; do sleep 0.005; done; echo started; touch ready; wait`, true, quick},
		{"double-fork-setsid", `( setsid sh -c 'sleep 300 & echo $! > esc.pid' & ); while [ ! -s esc.pid ]; do sleep 0.005; done; touch ready; sleep 300`, true, quick},
		{"ignores-term", `trap "" TERM; sleep 300 & touch ready; wait; wait`, false, grace + quick},
		{"fork-200", `i=0; while [ $i -lt 200 ]; do sleep 300 & i=$((i+1)); done; touch ready; wait`, false, quick},
	}
	x := &Executor{Grace: grace, WaitDelay: waitDelay}
	var all, ignoring []time.Duration // processes dying on SIGTERM; one ignoring it
	total := 0
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			var over []time.Duration
			for i := 0; i < runs; i++ {
				dir := t.TempDir()
				mark := testMark(t)
				t.Cleanup(func() { killCensus(mark) })
				var out lockedBuffer
				job := testJob(dir, mark, v.script, nil, nil)
				if v.pipe {
					job.Stdout, job.Stderr = &out, &out
				} else {
					f, err := os.Create(filepath.Join(dir, "log"))
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					job.Stdout, job.Stderr = f, f
				}
				ctx, cancel := context.WithCancel(t.Context())
				type result struct {
					code int
					err  error
				}
				res := make(chan result, 1)
				go func() {
					code, err := x.Run(ctx, job)
					res <- result{code, err}
				}()
				waitFile(t, filepath.Join(dir, "ready"), 30*time.Second)
				cancel() // the timeout
				began := time.Now()
				var r result
				select {
				case r = <-res:
				case <-time.After(grace + waitDelay + 10*time.Second):
					t.Fatalf("Run did not return %s after the timeout", grace+waitDelay+10*time.Second)
				}
				took := time.Since(began)
				over = append(over, took)
				if r.err == nil || r.code != -1 {
					t.Errorf("Run = %d, %v; want -1 and the context's error", r.code, r.err)
				}
				if took > v.bound {
					t.Errorf("Run returned %s after the timeout, want at most %s (grace %s)", took, v.bound, grace)
				}
				if left := survivors(t, mark, time.Second); len(left) > 0 {
					t.Errorf("survivors after the timeout: %s", strings.Join(left, ", "))
				}
				total++
			}
			if v.bound == quick {
				all = append(all, over...)
			} else {
				ignoring = append(ignoring, over...)
			}
			t.Logf("%s: overshoot p50=%s max=%s", v.name, percentile(over, 0.5), percentile(over, 1))
		})
	}
	if len(all) > 0 && len(ignoring) > 0 {
		t.Logf("FIGURE T20 runs=%d overshoot_p50=%s overshoot_p99=%s ignoring_term_p99=%s grace=%s survivors=0 escapers=0",
			total, percentile(all, 0.5).Round(time.Millisecond), percentile(all, 0.99).Round(time.Millisecond),
			percentile(ignoring, 0.99).Round(time.Millisecond), grace)
	}
}

// TestPipeHolderDoesNotHangWait is T21: a command that leaves a
// background process holding its output and exits 0 at once is over at
// once, whether its output goes to a file or through a pipe; the
// background process is killed with the group. A process that escaped both
// the group and the job marker holds the pipe for at most WaitDelay: the
// job then keeps its exit status and its log says output was dropped.
func TestPipeHolderDoesNotHangWait(t *testing.T) {
	x := &Executor{} // the defaults: 5s grace, 1s WaitDelay
	var worst time.Duration
	for _, tc := range []struct {
		name string
		pipe bool
	}{{"file", false}, {"pipe", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mark := testMark(t)
			t.Cleanup(func() { killCensus(mark) })
			var out lockedBuffer
			job := testJob(dir, mark, `sleep 30 & echo ok`, &out, &out)
			var f *os.File
			if !tc.pipe {
				var err error
				if f, err = os.Create(filepath.Join(dir, "log")); err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				job.Stdout, job.Stderr = f, f
			}
			began := time.Now()
			code, err := x.Run(t.Context(), job)
			took := time.Since(began)
			worst = max(worst, took)
			if code != 0 || err != nil {
				t.Fatalf("Run = %d, %v; want 0, nil", code, err)
			}
			got := out.String()
			if f != nil {
				b, _ := os.ReadFile(f.Name())
				got = string(b)
			}
			if got != "ok\n" {
				t.Errorf("output %q, want %q", got, "ok\n")
			}
			if took > 2500*time.Millisecond {
				t.Errorf("Run took %s, want well under the 5s grace (target 1.5s; the sleeper holds the output for 30s)", took)
			}
			if left := survivors(t, mark, time.Second); len(left) > 0 {
				t.Errorf("leftovers: %s", strings.Join(left, ", "))
			}
		})
	}

	t.Run("unmarked-escaper", func(t *testing.T) {
		dir := t.TempDir()
		mark := testMark(t)
		var out lockedBuffer
		// The escaper leaves the group and drops every marker: only
		// WaitDelay bounds the wait for the pipe it holds.
		job := testJob(dir, mark, `env -u CAIRN_JOB -u CAIRN_TEST_MARK setsid sh -c 'echo $$ > esc.pid; exec sleep 30' & while [ ! -s esc.pid ]; do sleep 0.005; done; echo ok`, &out, &out)
		t.Cleanup(func() {
			if b, err := os.ReadFile(filepath.Join(dir, "esc.pid")); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
		began := time.Now()
		code, err := x.Run(t.Context(), job)
		took := time.Since(began)
		if code != 0 || err != nil {
			t.Fatalf("Run = %d, %v; want 0, nil", code, err)
		}
		if took > 3*time.Second {
			t.Errorf("Run took %s, want about WaitDelay (1s), well under the 5s grace", took)
		}
		if got := out.String(); !strings.HasPrefix(got, "ok\n") || !strings.Contains(got, "was dropped") {
			t.Errorf("output %q: want ok and a note that later output was dropped", got)
		}
	})
	t.Logf("FIGURE T21 time_to_finish=%s leftovers=0", worst.Round(time.Millisecond))
}

// TestKillSkipsGrace: closing Kill ends a job whose processes ignore
// SIGTERM without waiting out the grace period (a third Ctrl-C).
func TestKillSkipsGrace(t *testing.T) {
	kill := make(chan struct{})
	x := &Executor{Grace: time.Minute, Kill: kill}
	dir := t.TempDir()
	mark := testMark(t)
	t.Cleanup(func() { killCensus(mark) })
	job := testJob(dir, mark, `trap "" TERM; touch ready; while :; do sleep 0.01; done`, nil, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := x.Run(ctx, job); done <- err }()
	waitFile(t, filepath.Join(dir, "ready"), 30*time.Second)
	cancel()
	// The job ignores SIGTERM: it is still running a grace period later.
	select {
	case err := <-done:
		t.Fatalf("Run returned %v before Kill, though the job ignores SIGTERM", err)
	case <-time.After(200 * time.Millisecond):
	}
	began := time.Now()
	close(kill)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of Kill")
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("Run returned %s after Kill, want well under the 1m grace (target 1s)", took)
	}
	if left := survivors(t, mark, time.Second); len(left) > 0 {
		t.Errorf("survivors: %s", strings.Join(left, ", "))
	}
}

// TestKillMarkedMinPID: the pid floor skips processes numbered below it
// and finds those at or above it; the reaper serves queued markers and
// flush waits for them.
func TestKillMarkedMinPID(t *testing.T) {
	mark := testMark(t)
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), "CAIRN_TEST_MARK="+mark)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	pid := cmd.Process.Pid
	// A later process raises the floor above the marked one (pids grow
	// until they wrap around, which killMarkedAll checks).
	later := exec.Command("true")
	if err := later.Run(); err != nil {
		t.Fatal(err)
	}
	if later.Process.Pid <= pid {
		t.Skip("pids wrapped around between two starts")
	}
	killMarkedAll([]string{"CAIRN_TEST_MARK=" + mark}, later.Process.Pid)
	select {
	case err := <-waited:
		t.Fatalf("a process below the pid floor was killed (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	var r markReaper
	r.add("CAIRN_TEST_MARK="+mark, pid)
	r.flush()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the reaper did not kill the marked process")
	}
}
