package main

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/upkeep"
	"github.com/cairn-run/cairn/internal/failpoint"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/workspace"
)

// buildCairn builds the cairn binary once per test binary run.
func buildCairn(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cairn")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func hclList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func outTexts(t *testing.T, ws string) map[string]string {
	m := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(ws, "out", "*.txt"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(f)] = string(b)
	}
	return m
}

// TestCrashLoop is RELIABILITY.md T1: cairn runs the generated experiment
// on one cache and is SIGKILLed (its whole process group) at a random
// moment, again and again. After every kill cache.Verify finds no corrupt
// and no dangling object, every run record parses, and no phase a run
// recorded as finished runs again; runs that get to the end produce the
// golden outputs, and so does a last run. The failpoint trace of each
// killed run says which protocol step it was at (the labels in flight);
// temp files left by the kills are cleared by GC.
func TestCrashLoop(t *testing.T) {
	began := time.Now()
	iterations := 30
	if longTier() {
		iterations = 200
	}
	root := scratchRoot(t)
	spec := genDAG(12, 1)
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
	rng := rand.New(rand.NewPCG(seed, 0))
	w := newCrashWS(t, root, "ws", spec)
	trace := filepath.Join(w.root, "trace")
	inFlight := map[string]bool{}
	kills, completions, maxTemps, lastTemps := 0, 0, 0, 0
	var verifyTime time.Duration
	var protocol []string
	for _, l := range failpoint.Labels {
		if strings.HasPrefix(l, "blob.") || strings.HasPrefix(l, "ac.") || strings.HasPrefix(l, "state.") || strings.HasPrefix(l, "ws.") {
			protocol = append(protocol, l)
		}
	}
	for i := range iterations {
		done, known := w.finishedPhases()
		os.Remove(trace)
		env := []string{"CAIRN_FAILPOINT_TRACE=" + trace}
		target, hits := "", 0
		if rng.IntN(4) != 0 {
			// Most runs pause 20 ms at every hit of one protocol step
			// and are killed while paused at its 1st to 3rd hit (the
			// trace says when), so that kills land inside every step;
			// the others are killed at a random moment.
			target, hits = protocol[rng.IntN(len(protocol))], 1+rng.IntN(3)
			env = append(env, "CAIRN_FAILPOINTS="+target+"=sleep(20)")
		}
		cmd := w.cmd(env, "run", "-j", "2")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		kill := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		exited := make(chan struct{})
		var delay time.Duration
		timer := time.AfterFunc(time.Hour, kill)
		timer.Stop()
		if target == "" {
			// Later runs have less left to do: most kills land within
			// the first 80% of an uninterrupted run.
			delay = time.Duration(rng.Int64N(int64(full * 8 / 10)))
			timer.Reset(delay)
		} else {
			go func() {
				tick := time.NewTicker(2 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-exited:
						return
					case <-tick.C:
						if labelCounts(traceLabels(t, trace))[target] >= hits {
							kill()
							return
						}
					}
				}
			}()
		}
		err := cmd.Wait()
		timer.Stop()
		close(exited)
		killed := exitedBySignal(err)
		if err != nil && !killed {
			t.Fatalf("run %d failed on its own: %v\n%s", i, err, out.String())
		}
		if labels := traceLabels(t, trace); killed && len(labels) > 0 {
			inFlight[labels[len(labels)-1]] = true
		}
		w.checkStates(fmt.Sprintf("after run %d", i))
		for id, ran := range w.counts() {
			if known[id] {
				continue
			}
			for name := range ran {
				if done[name] {
					t.Errorf("run %d (%s) ran %s again, which an earlier run had recorded as finished", i, id, name)
				}
			}
		}
		temps, vt := w.verify(fmt.Sprintf("after run %d (killed %v, at %s hit %d or after %s)", i, killed, target, hits, delay))
		// A killed run leaves the temp files of its writes in flight
		// and the temp name of its pack of entries (whose published
		// names keep it; GC removes the name after TempGrace).
		if temps-lastTemps > 3 {
			t.Errorf("run %d left %d temp files in the cache, more than the 2 writes -j 2 has in flight and its pack", i, temps-lastTemps)
		}
		lastTemps = temps
		maxTemps = max(maxTemps, temps)
		verifyTime += vt
		if killed {
			kills++
			continue
		}
		completions++
		if d := sameTree(w.tree(), want); d != "" {
			t.Errorf("run %d got to the end with outputs unlike the golden run: %s", i, d)
		}
		w.reset() // start again, so that every kill interrupts real work
		lastTemps = 0
	}
	w.run("run", "-j", "2")
	if d := sameTree(w.tree(), want); d != "" {
		t.Errorf("the last run's outputs differ from the golden run: %s", d)
	}
	w.verify("after the last run")
	// The workspace's own temp files (of state.json, digests, ...) left
	// by kills are gone too: each run clears those of the run it follows.
	w.checkWorkspaceTemps("after the last run")

	// GC, once the temp files are old, clears every one the kills left.
	c, err := cache.Open(w.cache)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * cache.TempGrace)
	if _, err := upkeep.GC(c, upkeep.GCOptions{Now: func() time.Time { return later }}); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(filepath.Join(w.cache, "tmp"))
	if len(left) > 0 {
		t.Errorf("GC left %d temp files (%s)", len(left), left[0].Name())
	}

	var seen []string
	for l := range inFlight {
		seen = append(seen, l)
	}
	sort.Strings(seen)
	t.Logf("labels in flight at the kills: %s", strings.Join(seen, " "))
	t.Logf("FIGURE T1 iterations=%d kills=%d completions=%d labels_in_flight=%d/%d coverage=%.0f%% corrupt=0 dangling=0 max_orphan_tmp=%d verify_ms=%.1f wall=%.1fs",
		iterations, kills, completions, len(inFlight), len(protocol), 100*float64(len(inFlight))/float64(len(protocol)), maxTemps,
		float64(verifyTime.Microseconds())/1000/float64(max(1, iterations)), time.Since(began).Seconds())
}

// finishedPhases returns the phases some run record says finished
// (succeeded, cached, restored), and the ids of the runs recorded so far,
// in the records and in counter.log.
func (w *crashWS) finishedPhases() (done, known map[string]bool) {
	done, known = map[string]bool{}, map[string]bool{}
	ws := workspace.Workspace{Root: w.ws}
	runs, err := ws.Records().Runs()
	if err != nil {
		w.t.Fatal(err)
	}
	for _, st := range runs {
		known[st.RunID] = true
		for name, ps := range st.Phases {
			switch ps.Status {
			case runrec.StatusSucceeded, runrec.StatusCached, runrec.StatusRestored:
				done[name] = true
			}
		}
	}
	for id := range w.counts() {
		known[id] = true
	}
	return done, known
}

// checkWorkspaceTemps fails the test if temp files of the workspace's
// state files are left in .cairn: a run clears those a killed run left.
func (w *crashWS) checkWorkspaceTemps(when string) {
	w.t.Helper()
	wsTemps, _ := filepath.Glob(filepath.Join(w.ws, ".cairn", ".*.tmp-*"))
	runTemps, _ := filepath.Glob(filepath.Join(w.ws, ".cairn", "runs", "*", ".*.tmp-*"))
	if n := len(wsTemps) + len(runTemps); n > 0 {
		w.errs++
		w.t.Errorf("%s: %d temp files left in the workspace's .cairn: %v", when, n, append(wsTemps, runTemps...))
	}
}

// checkStates fails the test if any run record does not parse: state
// files are published atomically, so a kill never leaves a torn one.
func (w *crashWS) checkStates(when string) {
	w.t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(w.ws, ".cairn", "runs", "*", "state.json"))
	for _, p := range dirs {
		if _, err := runrec.ReadState(p); err != nil {
			w.errs++
			w.t.Errorf("%s: %v", when, err)
		}
	}
}

// verifyCache reads back every blob and action entry of the cache: each
// blob must hash to its name and each entry decode with all its blobs,
// and there must be at least minEntries entries.
func verifyCache(t *testing.T, dir string, minEntries int) {
	t.Helper()
	c, err := cache.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	blobs, entries := 0, 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 3 {
			return nil
		}
		name := strings.TrimSuffix(parts[2], ".zst")
		raw, err := hex.DecodeString(name)
		if err != nil || len(raw) != 32 {
			return nil
		}
		switch parts[0] {
		case "cas":
			var dg cache.Digest
			copy(dg[:], raw)
			if _, err := c.ReadBlob(dg); err != nil {
				t.Errorf("blob %s: %v", name, err)
			}
			blobs++
		case "ac":
			var key cache.ActionID
			copy(key[:], raw)
			if _, err := c.GetEntry(key); err != nil {
				t.Errorf("entry %s: %v", name, err)
			}
			entries++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if entries < minEntries {
		t.Errorf("cache holds %d entries, want at least %d", entries, minEntries)
	}
	t.Logf("cache verified: %d blobs, %d entries", blobs, entries)
}
