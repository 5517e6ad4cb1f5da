package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-run/cairn/runrec"
)

// stateTail is the checksum member runrec.Marshal ends state.json
// with; reseal recomputes it, to build variants that are well sealed but
// say something else (a newer schema version).
var stateTail = regexp.MustCompile(`,\n  "checksum": "sha256:([0-9a-f]{64})"\n}\n$`)

func reseal(b []byte) []byte {
	m := stateTail.FindIndex(b)
	body := append(b[:m[0]:m[0]], "\n}"...)
	sum := sha256.Sum256(body)
	return append(body[:len(body)-2:len(body)-2], []byte(",\n  \"checksum\": \"sha256:"+hex.EncodeToString(sum[:])+"\"\n}\n")...)
}

// TestDamagedState is RELIABILITY.md T5: a run record (state.json) cut
// at every byte, with a flipped bit at every byte, empty, garbage, without
// its checksum or of a newer version is always detected (never read as a
// different run); `cairn resume` then refuses with a message saying what
// is wrong and how to go on, and never panics; a following `cairn run`
// succeeds and finds every result in the cache. The other state files
// (digests, entries, keys, phasekeys, lock, current) damaged the same ways never
// stop a run nor lose a cache entry.
func TestDamagedState(t *testing.T) {
	began := time.Now()
	cliSample := 6
	if longTier() {
		cliSample = 100
	}
	rng := rand.New(rand.NewPCG(5, 5))
	root := scratchRoot(t)
	w := newCrashWS(t, root, "ws", genDAG(4, 5))
	w.run("run", "-j", "2")
	runs, _ := filepath.Glob(filepath.Join(w.ws, ".cairn", "runs", "*", "state.json"))
	if len(runs) != 1 {
		t.Fatalf("%d run records, want 1", len(runs))
	}
	statePath := runs[0]
	orig, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runrec.ReadState(statePath); err != nil {
		t.Fatal(err)
	}

	type variant struct {
		name string
		b    []byte
	}
	var variants []variant
	for i := range len(orig) {
		variants = append(variants, variant{fmt.Sprintf("cut at %d", i), orig[:i]})
	}
	for i := range len(orig) {
		bits := []int{rng.IntN(8)}
		if longTier() {
			bits = []int{0, 1, 2, 3, 4, 5, 6, 7}
		}
		for _, bit := range bits {
			b := bytes.Clone(orig)
			b[i] ^= 1 << bit
			variants = append(variants, variant{fmt.Sprintf("bit %d of byte %d flipped", bit, i), b})
		}
	}
	for i := range 10 {
		g := make([]byte, 1+rng.IntN(2*len(orig)))
		for j := range g {
			g[j] = byte(rng.Uint32())
		}
		variants = append(variants, variant{fmt.Sprintf("garbage %d", i), g})
	}
	m := stateTail.FindIndex(orig)
	variants = append(variants,
		variant{"newer schema version", reseal(bytes.Replace(orig, []byte(`"schema_version": 2`), []byte(`"schema_version": 99`), 1))},
		variant{"schema version 0", reseal(bytes.Replace(orig, []byte(`"schema_version": 2`), []byte(`"schema_version": 0`), 1))},
		variant{"checksum member removed", append(orig[:m[0]:m[0]], "\n}\n"...)},
		variant{"zeros", make([]byte, len(orig))},
	)

	// In process: every variant is detected, or is the same record.
	detected, equivalent := 0, 0
	for _, v := range variants {
		if err := os.WriteFile(statePath, v.b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := runrec.ReadState(statePath)
		switch {
		case errors.Is(err, runrec.ErrDamagedState):
			detected++
		case err == nil && bytes.Equal(bytes.TrimSuffix(v.b, []byte("\n")), bytes.TrimSuffix(orig, []byte("\n"))):
			equivalent++
		default:
			t.Errorf("%s: not detected (ReadState: %v)", v.name, err)
		}
	}
	// A version 1 record (before checksums) is still read.
	v1 := bytes.Replace(append(orig[:m[0]:m[0]], "\n}\n"...), []byte(`"schema_version": 2`), []byte(`"schema_version": 1`), 1)
	if err := os.WriteFile(statePath, v1, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runrec.ReadState(statePath); err != nil {
		t.Errorf("a version 1 record: %v", err)
	}

	// Through the CLI, for a sample: resume refuses and says what to do,
	// and the next run gets everything from the cache.
	countBefore := w.executions()
	refused, recovered := 0, 0
	for i := range cliSample {
		v := variants[rng.IntN(len(variants))]
		if i < 4 { // always the empty, newer, zeros and garbage cases
			v = variants[[]int{0, len(variants) - 4, len(variants) - 1, len(variants) - 5}[i]]
		}
		w.keepOnlyRun(statePath)
		if err := os.WriteFile(statePath, v.b, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := w.cmd(nil, "resume").CombinedOutput()
		msg := string(out)
		switch {
		case strings.Contains(msg, "panic:") || strings.Contains(msg, "goroutine "):
			t.Errorf("%s: cairn resume panicked:\n%s", v.name, msg)
		case err == nil:
			t.Errorf("%s: cairn resume accepted a damaged record:\n%s", v.name, msg)
		case !strings.Contains(msg, statePath) && !strings.Contains(msg, "state.json"):
			t.Errorf("%s: cairn resume does not name the damaged file:\n%s", v.name, msg)
		case !strings.Contains(msg, "cairn run"):
			t.Errorf("%s: cairn resume does not say how to go on:\n%s", v.name, msg)
		default:
			refused++
		}
		if out, err := w.cmd(nil, "runs").CombinedOutput(); strings.Contains(string(out), "panic:") {
			t.Errorf("%s: cairn runs panicked (%v):\n%s", v.name, err, out)
		}
		if w.runRecovers(v.name, countBefore) {
			recovered++
		}
	}
	w.keepOnlyRun(statePath)
	if err := os.WriteFile(statePath, orig, 0o600); err != nil {
		t.Fatal(err)
	}

	// The other state files: a run goes on and loses nothing.
	others, otherOK := 0, 0
	for _, name := range []string{"digests", "entries", "keys", "phasekeys", "lock", "current"} {
		p := filepath.Join(w.ws, ".cairn", name)
		good, err := os.ReadFile(p)
		if err != nil || len(good) == 0 {
			// Not there, or (the lock file) empty between runs: a holder's record.
			good = []byte(`{"pid": 1, "run_id": "20250101-000000-abcdef", "host": "h"}`)
		}
		bad := [][]byte{nil, good[:len(good)/2], []byte("\x00\xff garbage\n")}
		flipped := bytes.Clone(good)
		flipped[rng.IntN(len(flipped))] ^= 1 << rng.IntN(8)
		bad = append(bad, flipped)
		if longTier() {
			for range 20 {
				bad = append(bad, good[:rng.IntN(len(good))])
			}
		}
		for j, b := range bad {
			others++
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if w.runRecovers(fmt.Sprintf("%s damaged (variant %d)", name, j), countBefore) {
				otherOK++
			}
		}
		if name == "digests" || name == "entries" || name == "keys" || name == "phasekeys" {
			if err := os.WriteFile(p, good, 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			os.Remove(p)
		}
	}
	t.Logf("FIGURE T5 variants=%d detected=%d equivalent=%d detection_rate=%.0f%% cli_variants=%d refused=%d recovered_by_run=%d other_files_variants=%d other_files_recovered=%d panics=0 wall=%.1fs",
		len(variants), detected, equivalent, 100*float64(detected)/float64(max(1, len(variants)-equivalent)),
		cliSample, refused, recovered, others, otherOK, time.Since(began).Seconds())
}

// executions returns how many phase executions counter.log records.
func (w *crashWS) executions() int {
	n := 0
	for _, ran := range w.counts() {
		for _, c := range ran {
			n += c
		}
	}
	return n
}

// keepOnlyRun removes every run record but the one at statePath.
func (w *crashWS) keepOnlyRun(statePath string) {
	dirs, _ := filepath.Glob(filepath.Join(w.ws, ".cairn", "runs", "*"))
	for _, d := range dirs {
		if d != filepath.Dir(statePath) {
			if err := os.RemoveAll(d); err != nil {
				w.t.Fatal(err)
			}
		}
	}
}

// runRecovers runs cairn run and reports whether it succeeded without
// running any phase (every result still in the cache), with no panic
// and a clean cache.
func (w *crashWS) runRecovers(what string, executionsBefore int) bool {
	w.t.Helper()
	out, err := w.cmd(nil, "run", "-j", "2").CombinedOutput()
	switch {
	case strings.Contains(string(out), "panic:"):
		w.t.Errorf("%s: cairn run panicked:\n%s", what, out)
	case err != nil:
		w.t.Errorf("%s: cairn run failed: %v\n%s", what, err, out)
	case w.executions() != executionsBefore:
		w.t.Errorf("%s: cairn run ran %d phases again: cache entries lost?\n%s", what, w.executions()-executionsBefore, out)
	default:
		errs := w.errs
		w.verify(what)
		return w.errs == errs
	}
	return false
}
