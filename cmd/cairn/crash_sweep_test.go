package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cairn-run/cairn/internal/failpoint"
)

// TestFailpointSweep is RELIABILITY.md T2: for every failpoint label an
// ordinary run passes (and GC's and quarantine's) and k in {1, last} ({1, 2, 3, last} in the long
// tier), a run is killed at the k-th hit of that label
// (label=(k-1)*off->kill), then run again without faults. Every
// combination must leave the cache valid (Verify), every run record
// readable, and the outputs of the second run byte-identical to an
// uninterrupted run's.
func TestFailpointSweep(t *testing.T) {
	began := time.Now()
	phases, ks := 3, []string{"1", "last"}
	if longTier() {
		phases, ks = 8, []string{"1", "2", "3", "last"}
	}
	root := scratchRoot(t)
	spec := genDAG(phases, 2)
	golden := newCrashWS(t, root, "golden", spec)
	trace := filepath.Join(golden.root, "trace")
	if out, err := golden.cmd([]string{"CAIRN_FAILPOINT_TRACE=" + trace}, "run", "-j", "2").CombinedOutput(); err != nil {
		t.Fatalf("golden run: %v\n%s", err, out)
	}
	want := golden.tree()
	counts := labelCounts(traceLabels(t, trace))
	var labels []string
	for _, l := range failpoint.Labels {
		switch {
		case counts[l] > 0:
			labels = append(labels, l)
		case strings.HasPrefix(l, "blob.") || strings.HasPrefix(l, "ac.") || strings.HasPrefix(l, "state."):
			t.Errorf("an ordinary run never reached failpoint %s", l)
		}
	}

	w := newCrashWS(t, root, "ws", spec)
	type cell struct{ passed, total int }
	matrix := map[string]map[string]*cell{}
	total, passed, notReached := 0, 0, 0
	for _, l := range labels {
		matrix[l] = map[string]*cell{}
		var done []int
		for _, ks := range ks {
			k := counts[l]
			if ks != "last" {
				fmt.Sscan(ks, &k)
			}
			if k > counts[l] || slices.Contains(done, k) {
				continue
			}
			done = append(done, k)
			c := &cell{}
			matrix[l][ks] = c
			total++
			c.total++
			name := fmt.Sprintf("%s k=%d", l, k)
			w.reset()
			fp := fmt.Sprintf("%s=%d*off->kill", l, k-1)
			out, err := w.cmd([]string{"CAIRN_FAILPOINTS=" + fp}, "run", "-j", "2").CombinedOutput()
			switch {
			case exitedBySignal(err):
			case err != nil:
				t.Errorf("%s: the run failed instead of being killed: %v\n%s", name, err, out)
				continue
			default:
				// The hits of a label vary a little with the order
				// phases finish in (shard directories made by one or
				// the other): not reached this time.
				notReached++
			}
			errsBefore := w.errs
			failed := false
			w.checkStates(name + ": after the kill")
			w.verify(name + ": after the kill")
			if out, err := w.cmd(nil, "run", "-j", "2").CombinedOutput(); err != nil {
				t.Errorf("%s: the run after the kill failed: %v\n%s", name, err, out)
				failed = true
			} else if d := sameTree(w.tree(), want); d != "" {
				t.Errorf("%s: outputs after the kill differ from the golden run: %s", name, d)
				failed = true
			}
			w.verify(name + ": after the run that followed")
			w.checkStates(name + ": after the run that followed")
			w.checkWorkspaceTemps(name + ": after the run that followed")
			if !failed && w.errs == errsBefore {
				c.passed++
				passed++
			}
		}
	}

	// GC and quarantine are not part of a run: kill cairn cache gc at
	// its first and last removal, and a run at the first quarantine of
	// a blob damaged on disk.
	for _, k := range []int{1, phases} { // one entry per phase
		total++
		name := fmt.Sprintf("gc.unlink k=%d", k)
		w.reset()
		w.run("run", "-j", "2")
		errsBefore := w.errs
		out, err := w.cmd([]string{fmt.Sprintf("CAIRN_FAILPOINTS=gc.unlink=%d*off->kill", k-1)}, "cache", "gc", "--max-size", "1").CombinedOutput()
		if !exitedBySignal(err) {
			t.Errorf("%s: cairn cache gc was not killed: %v\n%s", name, err, out)
			continue
		}
		w.verify(name + ": after the kill")
		w.run("run", "-j", "2")
		if d := sameTree(w.tree(), want); d != "" {
			t.Errorf("%s: outputs after the kill differ from the golden run: %s", name, d)
		} else if w.verify(name + ": after the run that followed"); w.errs == errsBefore {
			passed++
			if matrix["gc.unlink"] == nil {
				matrix["gc.unlink"], labels = map[string]*cell{}, append(labels, "gc.unlink")
			}
			matrix["gc.unlink"][map[bool]string{true: "1", false: "last"}[k == 1]] = &cell{1, 1}
		}
	}
	{
		total++
		name := "quarantine.rename k=1"
		w.reset()
		w.run("run", "-j", "2")
		blobs, _ := filepath.Glob(filepath.Join(w.cache, "cas", "*", "*"))
		var victim string
		for _, b := range blobs {
			if st, err := os.Stat(b); err == nil && st.Size() > 1000 {
				victim = b
				break
			}
		}
		if err := os.Chmod(victim, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(victim, bytes.Repeat([]byte("x"), 1001), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(w.ws, "out")); err != nil {
			t.Fatal(err)
		}
		os.Mkdir(filepath.Join(w.ws, "out"), 0o755)
		out, err := w.cmd([]string{"CAIRN_FAILPOINTS=quarantine.rename=kill"}, "run", "-j", "2").CombinedOutput()
		if !exitedBySignal(err) {
			t.Errorf("%s: the run was not killed: %v\n%s", name, err, out)
		} else {
			errsBefore := w.errs
			w.run("run", "-j", "2")
			if d := sameTree(w.tree(), want); d != "" {
				t.Errorf("%s: outputs after the kill differ from the golden run: %s", name, d)
			} else if w.verify(name + ": after the run that followed"); w.errs == errsBefore {
				passed++
				matrix["quarantine.rename"], labels = map[string]*cell{"1": {1, 1}}, append(labels, "quarantine.rename")
			}
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%-18s", "label \\ k")
	for _, k := range ks {
		fmt.Fprintf(&b, " %5s", k)
	}
	sort.Strings(labels)
	for _, l := range labels {
		fmt.Fprintf(&b, "\n%-18s", l)
		for _, k := range ks {
			if c := matrix[l][k]; c != nil {
				fmt.Fprintf(&b, " %2d/%-2d", c.passed, c.total)
			} else {
				fmt.Fprintf(&b, " %5s", "-")
			}
		}
	}
	t.Logf("T2 matrix (passed/combinations; - : k above the label's hits):\n%s", b.String())
	t.Logf("FIGURE T2 labels=%d combinations=%d passed=%d not_reached=%d wall=%.1fs",
		len(labels), total, passed, notReached, time.Since(began).Seconds())
}
