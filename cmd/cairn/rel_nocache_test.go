package main

import (
	"bytes"
	"strings"
	"syscall"
	"testing"

	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/runrec"
)

// failSpec: phases that write their output and then do not succeed.
const failSpec = `
phase "exit1" {
  command = "echo exit1 >> counter.log; echo partial > exit1.txt; exit 1"
  outputs = ["exit1.txt"]
}

phase "signal" {
  command = "echo signal >> counter.log; echo partial > signal.txt; kill -9 $$"
  outputs = ["signal.txt"]
}

phase "emfile" {
  command = "echo emfile >> counter.log; echo partial > emfile.txt; ulimit -n 3 && cat emfile.txt"
  outputs = ["emfile.txt"]
}

phase "timeout" {
  command = "echo timeout >> counter.log; echo partial > timeout.txt; sleep 300"
  outputs = ["timeout.txt"]
  budget {
    timeout = "300ms"
  }
}

phase "overbudget" {
  command = <<-SH
    echo overbudget >> counter.log
    echo partial > overbudget.txt
    echo '{"cost": 5}' >> "$CAIRN_REPORT"
    sleep 300
  SH
  outputs = ["overbudget.txt"]
  budget {
    max_cost = 1
  }
}

phase "missing" {
  command = "echo missing >> counter.log; echo other > other.txt"
  outputs = ["missing.txt"]
}

phase "interrupted" {
  command = <<-SH
    echo interrupted >> counter.log
    echo partial > interrupted.txt
    touch started.interrupted
    while [ ! -e release ]; do sleep 0.01; done
  SH
  outputs = ["interrupted.txt"]
}
`

// TestFailedNeverCached is T16: a phase that exits non-zero, is killed by
// a signal, hits EMFILE, times out, goes over budget, misses an output, or
// is ended by a second Ctrl-C, all after writing output, leaves no cache
// entry for its key, and the next run runs it again.
func TestFailedNeverCached(t *testing.T) {
	w := newRelWS(t, failSpec)
	want := map[string]string{
		"exit1":      runrec.StatusFailed,
		"signal":     runrec.StatusFailed,
		"emfile":     runrec.StatusFailed,
		"timeout":    runrec.StatusTimedOut,
		"overbudget": runrec.StatusOverBudget,
		"missing":    runrec.StatusFailed,
	}
	names := []string{"exit1", "signal", "emfile", "timeout", "overbudget", "missing"}
	cached := 0
	check := func(round int) {
		t.Helper()
		code, out := w.run(append([]string{"run", "--keep-going"}, names...)...)
		if code != exitFailed {
			t.Fatalf("round %d: exit %d, want %d\n%s", round, code, exitFailed, out)
		}
		st := w.latest()
		for _, n := range names {
			ps := st.Phases[n]
			if ps.Status != want[n] {
				t.Errorf("round %d: %s %s, want %s (%s)", round, n, ps.Status, want[n], ps.Error)
			}
			if ps.Key == "" {
				t.Errorf("round %d: %s has no key in state.json", round, n)
			} else if w.entry(ps.Key) != nil {
				cached++
				t.Errorf("round %d: %s (%s) was cached", round, n, ps.Status)
			}
		}
	}
	check(1)
	check(2)

	// The second Ctrl-C.
	var out bytes.Buffer
	cmd := w.cmd(&out, "run", "interrupted")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.waitFiles("started.interrupted")
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	w.waitLatest("stop_reason interrupt", func(s relState) bool { return s.StopReason == engine.StopInterrupt })
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	if code := exitCode(cmd.Wait()); code != exitStopped {
		t.Errorf("interrupted run: exit %d, want %d\n%s", code, exitStopped, out.String())
	}
	ps := w.latest().Phases["interrupted"]
	if ps.Status != runrec.StatusStopped {
		t.Errorf("interrupted: %s, want stopped", ps.Status)
	}
	if w.entry(ps.Key) != nil {
		cached++
		t.Errorf("interrupted was cached")
	}
	w.write("release", "")
	w.mustRun("run", "interrupted")

	counts := w.read("counter.log")
	for _, n := range append(names, "interrupted") {
		if got := strings.Count(counts, n+"\n"); got != 2 {
			t.Errorf("%s ran %d times, want 2 (each run runs it again)", n, got)
		}
	}
	w.verify()
	t.Logf("FIGURE T16 cases=%d cached=%d", len(names)+1, cached)
}
