package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/workspace"
)

// TestResumeIdentical is RELIABILITY.md T3: the runner (cairn alone, not
// its phases) is SIGKILLed at a random moment, then `cairn resume` takes
// over, and is killed again, until a resume gets to the end; M
// independent trials. The final outputs equal an uninterrupted run's in
// every trial, run records always parse, and a phase runs again only if
// no record said it had finished: only phases in flight at a kill are
// redone (the side-effect counter, counter.log, tells).
func TestResumeIdentical(t *testing.T) {
	began := time.Now()
	trials, phases := 10, 10
	if longTier() {
		trials, phases = 100, 20
	}
	root := scratchRoot(t)
	spec := genDAG(phases, 3)
	golden := newCrashWS(t, root, "golden", spec)
	start := time.Now()
	golden.run("run", "-j", "2")
	full := time.Since(start)
	want := golden.tree()

	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("CAIRN_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (CAIRN_CRASH_SEED repeats it); an uninterrupted run takes %s", seed, full)
	rng := rand.New(rand.NewPCG(seed, 3))
	w := newCrashWS(t, root, "ws", spec)
	identical, resumes, rerunTotal, rerunMax, executions := 0, 0, 0, 0, 0
	for trial := range trials {
		w.reset()
		args := []string{"run", "-j", "2"}
		for step := 0; ; step++ {
			done, known := w.finishedPhases()
			cmd := w.cmd(nil, args...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var timer *time.Timer
			if step < 6 {
				delay := time.Duration(rng.Int64N(int64(full * 7 / 10)))
				// The runner only: its phases, in process groups of
				// their own, live on until the next resume ends them.
				timer = time.AfterFunc(delay, func() { _ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL) })
			}
			err := cmd.Wait()
			if timer != nil {
				timer.Stop()
			}
			killed := exitedBySignal(err)
			if err != nil && !killed {
				t.Fatalf("trial %d step %d: cairn %s failed on its own: %v\n%s", trial, step, strings.Join(args, " "), err, out.String())
			}
			w.checkStates(fmt.Sprintf("trial %d step %d", trial, step))
			rerun := 0
			for id, ran := range w.counts() {
				if known[id] {
					continue
				}
				for name, n := range ran {
					executions += n
					if done[name] {
						t.Errorf("trial %d step %d: run %s ran %s again, which an earlier run had recorded as finished", trial, step, id, name)
					}
					if w.ranBefore(name, id) {
						rerun++
					}
				}
			}
			if step > 0 {
				resumes++
				rerunTotal += rerun
				rerunMax = max(rerunMax, rerun)
			}
			if !killed {
				break
			}
			// Resume the killed run, unless it was killed before writing
			// its record (then there is nothing to resume yet: run), or
			// after recording its success (then it is done).
			ws := workspace.Workspace{Root: w.ws}
			if last, err := ws.Records().FindRun(""); err == nil {
				if last.Status == runrec.RunSucceeded {
					break
				}
				args = []string{"resume"}
			}
		}
		if d := sameTree(w.tree(), want); d != "" {
			t.Errorf("trial %d: final outputs differ from the golden run: %s", trial, d)
		} else {
			identical++
		}
		w.verify(fmt.Sprintf("trial %d", trial))
	}
	mean := 0.0
	if resumes > 0 {
		mean = float64(rerunTotal) / float64(resumes)
	}
	t.Logf("FIGURE T3 trials=%d identical=%d/%d resumes=%d mean_rerun_per_resume=%.2f max_rerun_per_resume=%d redone_share=%.0f%% wall=%.1fs",
		trials, identical, trials, resumes, mean, rerunMax,
		100*float64(executions-trials*phases)/float64(max(1, executions)), time.Since(began).Seconds())
}

// ranBefore reports whether phase name ran in a run other than id.
func (w *crashWS) ranBefore(name, id string) bool {
	for other, ran := range w.counts() {
		if other != id && ran[name] > 0 {
			return true
		}
	}
	return false
}
