package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-run/cairn/internal/failpoint"
)

// TestErrnoRun is the whole-run half of RELIABILITY.md T15 (the cache
// package's TestErrnoSweep fails every file operation of the protocol in
// turn): every step of the cache and state write protocols fails with
// ENOSPC (and EIO, EACCES, EROFS in the long tier) at every hit during a
// run. cairn never panics: either the run still succeeds (a failed cache
// write is a warning: the outputs are fine) or it fails with a message
// naming the error; the cache holds no partial object, and a run
// without the fault then produces the golden outputs.
func TestErrnoRun(t *testing.T) {
	began := time.Now()
	errnos := []string{"ENOSPC"}
	if longTier() {
		errnos = []string{"ENOSPC", "EIO", "EACCES", "EROFS"}
	}
	root := scratchRoot(t)
	spec := genDAG(3, 6)
	golden := newCrashWS(t, root, "golden", spec)
	trace := filepath.Join(golden.root, "trace")
	if out, err := golden.cmd([]string{"CAIRN_FAILPOINT_TRACE=" + trace}, "run", "-j", "2").CombinedOutput(); err != nil {
		t.Fatalf("golden run: %v\n%s", err, out)
	}
	want := golden.tree()
	counts := labelCounts(traceLabels(t, trace))
	w := newCrashWS(t, root, "ws", spec)
	n, succeeded, failed, warned := 0, 0, 0, 0
	for _, l := range failpoint.Labels {
		if counts[l] == 0 {
			continue
		}
		for _, errno := range errnos {
			n++
			name := fmt.Sprintf("%s=error(%s)", l, errno)
			w.reset()
			out, err := w.cmd([]string{"CAIRN_FAILPOINTS=" + name}, "run", "-j", "2").CombinedOutput()
			msg := string(out)
			switch {
			case strings.Contains(msg, "panic:") || exitedBySignal(err):
				t.Errorf("%s: cairn crashed:\n%s", name, msg)
				continue
			case err != nil:
				failed++
			default:
				succeeded++
			}
			if strings.Contains(msg, "failpoint "+l) {
				warned++
			} else if err != nil {
				t.Errorf("%s: the run failed without saying why:\n%s", name, msg)
			}
			w.verify(name)
			if out, err := w.cmd(nil, "run", "-j", "2").CombinedOutput(); err != nil {
				t.Errorf("%s: the run after the fault failed: %v\n%s", name, err, out)
			} else if d := sameTree(w.tree(), want); d != "" {
				t.Errorf("%s: outputs after the fault differ from the golden run: %s", name, d)
			}
			w.verify(name + ", then a run without it")
		}
	}
	t.Logf("FIGURE T15 run_combinations=%d run_succeeded=%d run_failed=%d said_what_failed=%d partial_objects=0 wall=%.1fs",
		n, succeeded, failed, warned, time.Since(began).Seconds())
}
