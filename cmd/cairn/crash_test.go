package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
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

// crashSpec is a 20-phase experiment in four layers of five; each phase
// concatenates the outputs of the whole layer above it and records its
// start.
func crashSpec() string {
	var b strings.Builder
	for layer := 0; layer < 4; layer++ {
		for j := 0; j < 5; j++ {
			name := fmt.Sprintf("p%d%d", layer, j)
			var ins []string
			if layer > 0 {
				for k := 0; k < 5; k++ {
					ins = append(ins, fmt.Sprintf("out/p%d%d.txt", layer-1, k))
				}
			}
			// Shell builtins only: one process per phase keeps 50 kills
			// affordable on a slow machine.
			cmd := fmt.Sprintf(`echo "%s $CAIRN_RUN_ID" >> starts.log; { echo %s; for f in %s; do while IFS= read -r l; do echo "$l"; done < $f; done; } > out/%s.txt`,
				name, name, strings.Join(ins, " "), name)
			fmt.Fprintf(&b, "phase %q {\n  command = %q\n  inputs  = %s\n  outputs = [\"out/%s.txt\"]\n}\n\n",
				name, cmd, hclList(ins), name)
		}
	}
	return b.String()
}

func hclList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

type crashState struct {
	RunID   string    `json:"run_id"`
	Started time.Time `json:"started"`
	Phases  map[string]struct {
		Status string `json:"status"`
	} `json:"phases"`
}

func readStates(t *testing.T, ws string) []crashState {
	files, _ := filepath.Glob(filepath.Join(ws, ".cairn", "runs", "*", "state.json"))
	var out []crashState
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var st crashState
		if err := json.Unmarshal(b, &st); err != nil {
			// state.json is written atomically: it must always parse.
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// finished returns the phases some run recorded as done.
func finished(states []crashState) map[string]bool {
	done := map[string]bool{}
	for _, st := range states {
		for name, ps := range st.Phases {
			switch ps.Status {
			case "succeeded", "cached", "restored":
				done[name] = true
			}
		}
	}
	return done
}

func startsOf(t *testing.T, ws, runID string) []string {
	b, err := os.ReadFile(filepath.Join(ws, "starts.log"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		if name, id, ok := strings.Cut(line, " "); ok && id == runID {
			names = append(names, name)
		}
	}
	return names
}

func outputs(t *testing.T, ws string) map[string]string {
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

// TestCrashLoop kills a running cairn with SIGKILL at 50 random moments,
// running it again each time: no phase recorded as finished before a kill
// ever runs again, the final outputs equal those of an uninterrupted run,
// and every object in the cache verifies.
func TestCrashLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("crash loop: skipped with -short")
	}
	bin := buildCairn(t)
	spec := crashSpec()
	setup := func(name string) (ws, cacheDir string) {
		root := t.TempDir()
		ws = filepath.Join(root, name)
		cacheDir = filepath.Join(root, "cache")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "experiment.hcl"), []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		return ws, cacheDir
	}
	run := func(ws, cacheDir string) *exec.Cmd {
		cmd := exec.Command(bin, "run", "-j", "4")
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "CAIRN_CACHE_DIR="+cacheDir, "NO_COLOR=1")
		return cmd
	}

	// The reference: one uninterrupted run.
	refWS, refCache := setup("ref")
	began := time.Now()
	if out, err := run(refWS, refCache).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	full := time.Since(began)
	want := outputs(t, refWS)
	if len(want) != 20 {
		t.Fatalf("reference run produced %d outputs, want 20", len(want))
	}

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d; an uninterrupted run takes %s", seed, full)
	rng := rand.New(rand.NewPCG(seed, 0))
	ws, cacheDir := setup("ws")
	kills := 0
	for i := 0; kills < 50; i++ {
		if i > 500 {
			t.Fatalf("only %d of 50 kills landed in 500 runs", kills)
		}
		prior := readStates(t, ws)
		before := finished(prior)
		seen := map[string]bool{}
		for _, st := range prior {
			seen[st.RunID] = true
		}
		cmd := run(ws, cacheDir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Later runs have less left to do: kill within the first 60% of
		// an uninterrupted run's time so that most kills land mid-run.
		delay := time.Duration(rng.Int64N(int64(full * 6 / 10)))
		timer := time.AfterFunc(delay, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		err := cmd.Wait()
		timer.Stop()
		killed := false
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				killed = true
			}
		}
		if err != nil && !killed {
			t.Fatalf("run %d failed on its own: %v\n%s", i, err, out.String())
		}
		for _, st := range readStates(t, ws) {
			if seen[st.RunID] {
				continue
			}
			// This run's record (absent when it was killed before
			// writing one, and then it started no phase).
			for _, name := range startsOf(t, ws, st.RunID) {
				if before[name] {
					t.Fatalf("run %d (%s) ran %s again, which an earlier run had finished", i, st.RunID, name)
				}
			}
		}
		if killed {
			kills++
		} else {
			// The run got to the end: start again from scratch so that
			// every kill interrupts real work.
			if err := os.RemoveAll(filepath.Join(ws, ".cairn")); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(ws, "out")); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(cacheDir); err != nil {
				t.Fatal(err)
			}
		}
	}

	// A last run to completion: outputs equal the reference, byte for byte.
	if out, err := run(ws, cacheDir).CombinedOutput(); err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
	}
	got := outputs(t, ws)
	if len(got) != len(want) {
		t.Fatalf("final run left %d outputs, want %d", len(got), len(want))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s = %q, want %q (uninterrupted run)", name, got[name], w)
		}
	}
	verifyCache(t, cacheDir)
}

// verifyCache reads back every blob and action entry of the cache: each
// blob must hash to its name and each entry decode with all its blobs.
func verifyCache(t *testing.T, dir string) {
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
	if entries < 20 {
		t.Errorf("cache holds %d entries, want at least 20", entries)
	}
	t.Logf("cache verified: %d blobs, %d entries", blobs, entries)
}
