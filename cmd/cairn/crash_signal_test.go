package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/workspace"
)

// TestSignalDuringPublish is RELIABILITY.md T25: SIGINT or SIGTERM reaches
// cairn while it is in the middle of publishing a blob, an entry or a run
// record (a failpoint pauses it there; the trace says when). cairn stops
// gracefully: it finishes the publish, exits with 130 (or 0 if nothing
// was left to do), leaves no partial object and a record that says
// stopped, and `cairn resume` then gets to the golden outputs.
func TestSignalDuringPublish(t *testing.T) {
	began := time.Now()
	type tc struct {
		label string
		sig   syscall.Signal
	}
	cases := []tc{{"blob.fsync", syscall.SIGINT}, {"ac.link", syscall.SIGTERM}, {"blob.link", syscall.SIGTERM}, {"state.rename", syscall.SIGINT}}
	if longTier() {
		cases = nil
		for _, l := range []string{"blob.write", "blob.fsync", "blob.link", "blob.fsync-dir", "ac.write", "ac.fsync", "ac.link", "ac.fsync-dir", "state.fsync", "state.rename"} {
			cases = append(cases, tc{l, syscall.SIGINT}, tc{l, syscall.SIGTERM})
		}
	}
	root := scratchRoot(t)
	spec := genDAG(6, 4)
	golden := newCrashWS(t, root, "golden", spec)
	golden.run("run", "-j", "2")
	want := golden.tree()

	w := newCrashWS(t, root, "ws", spec)
	trace := filepath.Join(w.root, "trace")
	graceful, resumed := 0, 0
	for _, c := range cases {
		name := fmt.Sprintf("%s at %s", c.sig, c.label)
		caseBegan := time.Now()
		w.reset()
		os.Remove(trace)
		// Pause 400 ms at the second hit of the label (the first may be
		// the cache's format file or the run's first record).
		cmd := w.cmd([]string{"CAIRN_FAILPOINT_TRACE=" + trace, "CAIRN_FAILPOINTS=" + c.label + "=1*off->1*sleep(400)->off"}, "run", "-j", "2")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		var err error
		signalled := false
	wait:
		for {
			select {
			case err = <-exited:
				break wait
			case <-time.After(2 * time.Millisecond):
				if !signalled && labelCounts(traceLabels(t, trace))[c.label] >= 2 {
					signalled = true
					_ = cmd.Process.Signal(c.sig)
				}
			}
		}
		if !signalled {
			t.Errorf("%s: the run never reached the second hit of %s", name, c.label)
			continue
		}
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		switch {
		case exitedBySignal(err):
			t.Errorf("%s: cairn died of the signal instead of stopping:\n%s", name, out.String())
			continue
		case err != nil && code != exitStopped:
			t.Errorf("%s: exit status %d, want %d (stopped) or 0:\n%s", name, code, exitStopped, out.String())
			continue
		case strings.Contains(out.String(), "panic:"):
			t.Errorf("%s: panic:\n%s", name, out.String())
			continue
		}
		errsBefore := w.errs
		w.verify(name)
		w.checkStates(name)
		ws := workspace.Workspace{Root: w.ws}
		last, ferr := ws.Records().FindRun("")
		switch {
		case ferr != nil:
			t.Errorf("%s: %v", name, ferr)
			continue
		case code == exitStopped && last.Status != runrec.RunStopped:
			t.Errorf("%s: exit %d but the record says %s", name, code, last.Status)
		case code == 0 && last.Status != runrec.RunSucceeded:
			t.Errorf("%s: exit 0 but the record says %s", name, last.Status)
		}
		if w.errs == errsBefore {
			graceful++
		}
		t.Logf("%s: exit %d, run %s, %s after the start", name, code, last.Status, time.Since(caseBegan).Round(time.Millisecond))
		if code == exitStopped {
			w.run("resume")
		}
		if d := sameTree(w.tree(), want); d != "" {
			t.Errorf("%s: outputs after the resume differ from the golden run: %s", name, d)
			continue
		}
		w.verify(name + ", resumed")
		resumed++
	}
	t.Logf("FIGURE T25 cases=%d graceful=%d partial_objects=0 resumed=%d wall=%.1fs",
		len(cases), graceful, resumed, time.Since(began).Seconds())
}
