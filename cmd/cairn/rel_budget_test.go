package main

import (
	"bytes"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-run/cairn/runrec"
)

// budgetSpec: phases that spend through $CAIRN_REPORT in a loop, one
// unit every 5 ms, and note when they cross their budget (just before the
// report line that crosses it, so that the note is whole before cairn can
// see that line and stop the phase); one that sleeps
// past its timeout; one that writes a flood of report lines and exits.
const budgetSpec = `
phase "iters" {
  command = <<-SH
    i=0
    while :; do
      i=$((i+1))
      [ $i -eq 21 ] && date +%s%N > crossed.iters
      echo '{"iterations": 1}' >> "$CAIRN_REPORT"
      sleep 0.005
    done
  SH
  outputs = ["iters.txt"]
  budget {
    max_iterations = 20
  }
}

phase "cost" {
  command = <<-SH
    i=0
    while :; do
      i=$((i+1))
      [ $i -eq 21 ] && date +%s%N > crossed.cost
      echo '{"cost": 0.5}' >> "$CAIRN_REPORT"
      sleep 0.005
    done
  SH
  outputs = ["cost.txt"]
  budget {
    max_cost = 10
  }
}

phase "slow" {
  command = "sleep 300"
  outputs = ["slow.txt"]
  budget {
    timeout = "500ms"
  }
}

phase "flood" {
  command = "yes '{\"iterations\": 1}' | head -n 300000 >> \"$CAIRN_REPORT\"; echo flood > flood.txt"
  outputs = ["flood.txt"]
}
`

// TestBudgetEnforcement is T22: max_iterations and max_cost, reported
// live through $CAIRN_REPORT, stop a phase soon after it crosses them;
// a timeout stops it soon after it expires; each is recorded with its own
// status and what was spent. A phase that floods its report is counted
// in full while cairn's memory stays bounded.
func TestBudgetEnforcement(t *testing.T) {
	w := newRelWS(t, budgetSpec)
	var out bytes.Buffer
	cmd := w.cmd(&out, "run", "--keep-going", "-j", "4")
	if err := cmd.Run(); exitCode(err) != exitFailed {
		t.Fatalf("exit %d, want %d\n%s", exitCode(err), exitFailed, out.String())
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB
	st := w.latest()
	ns := func(name string) time.Time {
		n, err := strconv.ParseInt(strings.TrimSpace(w.read(name)), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return time.Unix(0, n)
	}
	var figures []string
	for _, tc := range []struct {
		phase, status string
		limit         float64
		spent         func() float64
	}{
		{"iters", runrec.StatusOverBudget, 20, func() float64 { return float64(st.Phases["iters"].Iterations) }},
		{"cost", runrec.StatusOverBudget, 10, func() float64 { return st.Phases["cost"].Cost }},
	} {
		ps := st.Phases[tc.phase]
		if ps.Status != tc.status {
			t.Errorf("%s: %s, want %s (%s)", tc.phase, ps.Status, tc.status, ps.Error)
			continue
		}
		// From the report line that crossed the budget to the phase's end.
		late := ps.Ended.Sub(ns("crossed." + tc.phase))
		if late > 2*time.Second {
			t.Errorf("%s: stopped %s after crossing its budget, want < 2s (polling every 100ms)", tc.phase, late)
		}
		if tc.spent() <= tc.limit {
			t.Errorf("%s: recorded spend %v, want over the limit %v", tc.phase, tc.spent(), tc.limit)
		}
		figures = append(figures, tc.phase+"_time_to_kill="+late.Round(time.Millisecond).String(),
			tc.phase+"_overshoot="+strconv.FormatFloat(tc.spent()-tc.limit, 'f', -1, 64))
	}
	slow := st.Phases["slow"]
	if slow.Status != runrec.StatusTimedOut {
		t.Errorf("slow: %s, want %s", slow.Status, runrec.StatusTimedOut)
	} else {
		over := slow.Ended.Sub(*slow.Started) - 500*time.Millisecond
		if over > 2*time.Second {
			t.Errorf("slow: ended %s after its timeout, want < 2s", over)
		}
		figures = append(figures, "timeout_overshoot="+over.Round(time.Millisecond).String())
	}
	flood := st.Phases["flood"]
	if flood.Status != runrec.StatusSucceeded || flood.Iterations != 300000 {
		t.Errorf("flood: %s with %d iterations, want succeeded with 300000 (every report line counted)", flood.Status, flood.Iterations)
	}
	if rss > 200*1024 {
		t.Errorf("cairn's max RSS %d KiB, want < 200 MiB", rss)
	}
	t.Logf("FIGURE T22 %s runner_max_rss=%dKiB", strings.Join(figures, " "), rss)
}
