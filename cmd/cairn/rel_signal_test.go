package main

import (
	"bytes"
	"fmt"
	"github.com/cairn-run/cairn/executor/local"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/runrec"
)

// sigSpec: three phases that log every SIGINT and SIGTERM they get to
// sig.NAME (and carry on: they ignore both), wait for a release file, and
// a fourth that joins them.
const sigSpec = `
phase "a" {
  command = <<-SH
    echo a >> counter.log
    trap 'echo INT >> sig.a' INT
    trap 'echo TERM >> sig.a' TERM
    touch started.a
    while [ ! -e release ]; do sleep 0.01; done
    echo a > a.txt
  SH
  outputs = ["a.txt"]
}

phase "b" {
  command = <<-SH
    echo b >> counter.log
    trap 'echo INT >> sig.b' INT
    trap 'echo TERM >> sig.b' TERM
    touch started.b
    while [ ! -e release ]; do sleep 0.01; done
    echo b > b.txt
  SH
  outputs = ["b.txt"]
}

phase "c" {
  command = <<-SH
    echo c >> counter.log
    trap 'echo INT >> sig.c' INT
    trap 'echo TERM >> sig.c' TERM
    touch started.c
    while [ ! -e release ]; do sleep 0.01; done
    echo c > c.txt
  SH
  outputs = ["c.txt"]
}

phase "d" {
  inputs  = ["a.txt", "b.txt", "c.txt"]
  command = "echo d >> counter.log; cat a.txt b.txt c.txt > d.txt"
  outputs = ["d.txt"]
}
`

// TestCtrlC is T24: cairn runs as a process-group leader, as a shell
// starts it, and every Ctrl-C is a SIGINT to that whole group, as a
// terminal sends it. Phases run in their own process groups, so the
// terminal's SIGINT reaches cairn alone: a phase gets no signal from the
// first Ctrl-C (graceful: it finishes and is cached) and exactly one
// SIGTERM, from cairn, at the second (forceful: SIGKILL follows after the
// grace period, or at once on a third Ctrl-C). cairn never exits while a
// phase process still runs, the state stays resumable, and resume ends
// with the outputs of an uninterrupted run.
func TestCtrlC(t *testing.T) {
	sigs := func(w *relWS, name string) string { return w.read("sig." + name) }
	interrupt := func(t *testing.T, pgid int) {
		t.Helper()
		if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
	}
	finish := func(t *testing.T, w *relWS) {
		t.Helper()
		w.write("release", "")
		w.mustRun("resume")
		if got := w.read("d.txt"); got != "a\nb\nc\n" {
			t.Errorf("after resume d.txt = %q, want %q", got, "a\nb\nc\n")
		}
		if st := w.latest(); st.Status != runrec.RunSucceeded {
			t.Errorf("resume ended %s, want succeeded", st.Status)
		}
	}
	var figures []string

	t.Run("A-one", func(t *testing.T) {
		w := newRelWS(t, sigSpec)
		var out bytes.Buffer
		cmd := w.cmd(&out, "run", "-j", "3")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.waitFiles("started.a", "started.b", "started.c")
		began := time.Now()
		interrupt(t, cmd.Process.Pid)
		w.waitLatest("stop_reason interrupt", func(s relState) bool { return s.StopReason == engine.StopInterrupt })
		w.write("release", "")
		err := cmd.Wait()
		took := time.Since(began)
		if left := w.phaseProcs(); len(left) > 0 {
			t.Errorf("cairn exited while phase processes still ran: %s", strings.Join(left, ", "))
		}
		if code := exitCode(err); code != exitStopped {
			t.Errorf("exit code %d, want %d\n%s", code, exitStopped, out.String())
		}
		for _, n := range []string{"a", "b", "c"} {
			if s := sigs(w, n); s != "" {
				t.Errorf("phase %s got signals %q from one Ctrl-C, want none", n, s)
			}
		}
		st := w.latest()
		if st.Status != runrec.RunStopped {
			t.Errorf("run %s, want stopped", st.Status)
		}
		for _, n := range []string{"a", "b", "c"} {
			if s := st.Phases[n].Status; s != runrec.StatusSucceeded {
				t.Errorf("phase %s %s, want succeeded (running phases finish)", n, s)
			}
		}
		if s := st.Phases["d"].Status; s != runrec.StatusSkipped {
			t.Errorf("phase d %s, want skipped (no new phase starts)", s)
		}
		finish(t, w)
		if got := w.read("counter.log"); strings.Count(got, "a\n") != 1 || strings.Count(got, "d\n") != 1 {
			t.Errorf("counter.log %q: resume ran a finished phase again", got)
		}
		figures = append(figures, fmt.Sprintf("graceful_exit=%s", took.Round(time.Millisecond)))
	})

	// forceful interrupts a run whose phases ignore SIGTERM twice (or
	// three times) and returns the time from the second (or third) Ctrl-C
	// to cairn's exit.
	forceful := func(t *testing.T, third bool) time.Duration {
		w := newRelWS(t, sigSpec)
		var out bytes.Buffer
		cmd := w.cmd(&out, "run", "-j", "3")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.waitFiles("started.a", "started.b", "started.c")
		interrupt(t, cmd.Process.Pid)
		w.waitLatest("stop_reason interrupt", func(s relState) bool { return s.StopReason == engine.StopInterrupt })
		began := time.Now()
		interrupt(t, cmd.Process.Pid)
		if third {
			// Each phase logged its SIGTERM: it is ignoring it.
			deadline := time.Now().Add(30 * time.Second)
			for _, n := range []string{"a", "b", "c"} {
				for sigs(w, n) == "" && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
			}
			began = time.Now()
			interrupt(t, cmd.Process.Pid)
		}
		err := cmd.Wait()
		took := time.Since(began)
		if left := w.phaseProcs(); len(left) > 0 {
			t.Errorf("cairn exited while phase processes still ran: %s", strings.Join(left, ", "))
		}
		if code := exitCode(err); code != exitStopped {
			t.Errorf("exit code %d, want %d\n%s", code, exitStopped, out.String())
		}
		for _, n := range []string{"a", "b", "c"} {
			if s := sigs(w, n); s != "TERM\n" {
				t.Errorf("phase %s got signals %q, want exactly one SIGTERM and no SIGINT", n, s)
			}
		}
		st := w.latest()
		if st.Status != runrec.RunStopped {
			t.Errorf("run %s, want stopped", st.Status)
		}
		for _, n := range []string{"a", "b", "c"} {
			if s := st.Phases[n].Status; s != runrec.StatusStopped {
				t.Errorf("phase %s %s, want stopped", n, s)
			}
			if e := st.Phases[n].Key; e != "" && w.entry(e) != nil {
				t.Errorf("phase %s was cached though it was killed", n)
			}
		}
		finish(t, w)
		return took
	}
	t.Run("B-two", func(t *testing.T) {
		took := forceful(t, false)
		if bound := local.DefaultGrace + time.Second; took > bound {
			t.Errorf("cairn exited %s after the second Ctrl-C, want at most grace + 1s = %s", took, bound)
		}
		figures = append(figures, fmt.Sprintf("second_to_exit=%s", took.Round(time.Millisecond)))
	})
	t.Run("B-three", func(t *testing.T) {
		took := forceful(t, true)
		if took > 2*time.Second {
			t.Errorf("cairn exited %s after the third Ctrl-C, want well under the 5s grace (target 1s)", took)
		}
		figures = append(figures, fmt.Sprintf("third_to_exit=%s", took.Round(time.Millisecond)))
	})
	t.Logf("FIGURE T24 sigint_per_child=0 sigterm_per_child=1 %s resume=success", strings.Join(figures, " "))
}
