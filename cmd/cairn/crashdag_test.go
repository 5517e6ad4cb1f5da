package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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
	"github.com/cairn-run/cairn/cache/upkeep"
)

// This file is the harness of the crash tests (RELIABILITY.md H1, H4, H5):
// a generated experiment whose phases are this test binary re-executed as
// the command cairn-testphase, and helpers to run cairn (also this test
// binary, see TestMain), kill it, and check what it left.

// testPhaseMain is a phase of the generated experiment (H5):
//
//	cairn-testphase NAME OUT [IN...]
//
// It appends "NAME RUN-ID" to counter.log in the workspace (the side-effect
// counter: how often each phase really ran), checks that every input is a
// whole, self-validating output of another phase (exit 3 otherwise), and
// writes OUT: a self-validating file. The content depends only on NAME and
// the inputs, so every run of an experiment writes the same bytes.
func testPhaseMain() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: cairn-testphase NAME OUT [IN...]")
		os.Exit(2)
	}
	name, out, ins := os.Args[1], os.Args[2], os.Args[3:]
	ws := os.Getenv("CAIRN_WORKSPACE")
	f, err := os.OpenFile(filepath.Join(ws, "counter.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err == nil {
		_, err = f.Write([]byte(name + " " + os.Getenv("CAIRN_RUN_ID") + "\n"))
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var inSums []string
	for _, in := range ins {
		b, err := os.ReadFile(in)
		if err == nil {
			err = checkSelfValidating(b)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "input %s: %v\n", in, err)
			os.Exit(3)
		}
		sum := sha256.Sum256(b)
		inSums = append(inSums, in+" "+hex.EncodeToString(sum[:]))
	}
	// A seeded pause of 0-40 ms, so kills land at different steps.
	h := sha256.Sum256([]byte(name))
	time.Sleep(time.Duration(h[0]%41) * time.Millisecond)
	if err := os.WriteFile(out, selfValidating(name, inSums), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// selfValidating returns a phase's output: a header naming the phase and
// its inputs' digests, a body of 2^k records, and a last line with the
// SHA-256 of everything before it. Even-numbered phases write sequential
// integers (stored compressed), odd ones seeded random bytes (stored raw).
func selfValidating(name string, inSums []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "phase %s\n", name)
	for _, s := range inSums {
		fmt.Fprintf(&b, "input %s\n", s)
	}
	h := sha256.Sum256([]byte(name))
	k := 8 + int(h[1]%6) // 256 to 8192 records
	if h[2]%2 == 0 {
		for i := range 1 << k {
			fmt.Fprintf(&b, "%08d\n", i)
		}
	} else {
		rng := rand.New(rand.NewPCG(uint64(h[3]), uint64(h[4])))
		rec := make([]byte, 8)
		for range 1 << k {
			for j := range rec {
				rec[j] = byte(rng.Uint32())
			}
			b.Write(rec)
		}
		b.WriteByte('\n')
	}
	sum := sha256.Sum256(b.Bytes())
	fmt.Fprintf(&b, "sha256 %s\n", hex.EncodeToString(sum[:]))
	return b.Bytes()
}

// checkSelfValidating reports whether b is a whole output of
// selfValidating: its last line is the SHA-256 of the rest.
func checkSelfValidating(b []byte) error {
	const tail = len("sha256 ") + 64 + 1
	if len(b) < tail || b[len(b)-1] != '\n' || !bytes.HasPrefix(b[len(b)-tail:], []byte("sha256 ")) {
		return errors.New("torn: no checksum line at the end")
	}
	sum := sha256.Sum256(b[:len(b)-tail])
	if string(b[len(b)-tail+7:len(b)-1]) != hex.EncodeToString(sum[:]) {
		return errors.New("torn: the checksum does not match the content")
	}
	return nil
}

// genDAG returns an experiment of n phases (n ≥ 4) with fan-in and
// fan-out: phase i reads the outputs of one to three earlier phases,
// chosen by seed, and phase 0 and 1 are read by many.
func genDAG(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	for i := range n {
		name := fmt.Sprintf("p%02d", i)
		out := "out/" + name + ".dat"
		seen := map[string]bool{}
		var ins []string
		if i > 0 {
			for range 1 + rng.IntN(3) {
				j := rng.IntN(i)
				if i > 3 && rng.IntN(3) == 0 {
					j = rng.IntN(2) // fan-out from the first phases
				}
				in := fmt.Sprintf("out/p%02d.dat", j)
				if !seen[in] {
					seen[in] = true
					ins = append(ins, in)
				}
			}
			sort.Strings(ins)
		}
		cmd := strings.Join(append([]string{"cairn-testphase", name, out}, ins...), " ")
		fmt.Fprintf(&b, "phase %q {\n  command = %q\n  inputs  = %s\n  outputs = [%q]\n}\n\n", name, cmd, hclList(ins), out)
	}
	return b.String()
}

// crashWS is a workspace with the generated experiment and its own cache.
type crashWS struct {
	t     *testing.T
	root  string
	ws    string
	cache string
	errs  int // problems verify and checkStates reported
}

// scratchRoot is where crash tests put workspaces and caches: a memory
// file system when there is one (/dev/shm), since a crash test is about
// processes dying, not disks, and runs many times faster there.
func scratchRoot(t *testing.T) string {
	if d, err := os.MkdirTemp("/dev/shm", "cairn-crash-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return t.TempDir()
}

func newCrashWS(t *testing.T, root, name, spec string) *crashWS {
	t.Helper()
	w := &crashWS{t: t, root: filepath.Join(root, name)}
	w.ws = filepath.Join(w.root, "ws")
	w.cache = filepath.Join(w.root, "cache")
	if err := os.MkdirAll(filepath.Join(w.ws, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.ws, "experiment.hcl"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// cmd returns a cairn command in the workspace (this test binary, run as
// cairn by TestMain), with extra environment entries.
func (w *crashWS) cmd(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command("cairn", args...)
	cmd.Dir = w.ws
	cmd.Env = append(os.Environ(), "CAIRN_CACHE_DIR="+w.cache, "NO_COLOR=1", "CAIRN_FAILPOINTS=", "CAIRN_FAILPOINT_TRACE=")
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// run runs cairn to its end and fails the test if it fails.
func (w *crashWS) run(args ...string) string {
	w.t.Helper()
	out, err := w.cmd(nil, args...).CombinedOutput()
	if err != nil {
		w.t.Fatalf("cairn %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// reset removes the workspace's outputs, state and cache.
func (w *crashWS) reset() {
	for _, p := range []string{filepath.Join(w.ws, ".cairn"), filepath.Join(w.ws, "out"), filepath.Join(w.ws, "counter.log"), w.cache} {
		if err := os.RemoveAll(p); err != nil {
			w.t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(w.ws, "out"), 0o755); err != nil {
		w.t.Fatal(err)
	}
}

// tree returns the SHA-256 of every output file, by name.
func (w *crashWS) tree() map[string]string {
	m := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(w.ws, "out", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			w.t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		m[filepath.Base(f)] = hex.EncodeToString(sum[:8])
	}
	return m
}

// sameTree reports how got differs from want, or "".
func sameTree(got, want map[string]string) string {
	var diffs []string
	for k, v := range want {
		if got[k] != v {
			diffs = append(diffs, fmt.Sprintf("%s: %q, want %q", k, got[k], v))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, k+": unexpected")
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

// counts returns how many times each phase ran in each run, from
// counter.log: run id -> phase -> count.
func (w *crashWS) counts() map[string]map[string]int {
	b, err := os.ReadFile(filepath.Join(w.ws, "counter.log"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		w.t.Fatal(err)
	}
	m := map[string]map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		if name, id, ok := strings.Cut(line, " "); ok {
			if m[id] == nil {
				m[id] = map[string]int{}
			}
			m[id][name]++
		}
	}
	return m
}

// verify runs cache.Verify (H4) on the workspace's cache and fails the
// test on any problem other than temp files, whose number it returns.
func (w *crashWS) verify(when string) (temps int, elapsed time.Duration) {
	w.t.Helper()
	if _, err := os.Stat(w.cache); errors.Is(err, fs.ErrNotExist) {
		return 0, 0
	}
	c, err := cache.Open(w.cache)
	if err != nil {
		w.t.Fatalf("%s: %v", when, err)
	}
	rep, err := upkeep.Verify(c, upkeep.VerifyOptions{})
	if err != nil {
		w.t.Fatalf("%s: verify: %v", when, err)
	}
	for _, p := range rep.Problems {
		w.errs++
		w.t.Errorf("%s: verify: %s %s %s (%s): %s", when, p.Class, p.Kind, p.ID, p.Path, p.Cause)
	}
	return rep.InFlight, rep.Elapsed
}

// exitedBySignal reports whether err is a process killed by a signal.
func exitedBySignal(err error) bool {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return true
		}
	}
	return false
}

// traceLabels returns the labels in a failpoint trace file, in order.
func traceLabels(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// labelCounts counts the hits of each label in a trace.
func labelCounts(labels []string) map[string]int {
	m := map[string]int{}
	for _, l := range labels {
		m[l]++
	}
	return m
}
