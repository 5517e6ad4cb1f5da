package engine

import (
	"context"
	"fmt"
	"github.com/cairn-run/cairn/executor"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

// fakeExec runs phases in-process: it counts calls per phase and runs the
// phase's shell command through a tiny interpreter of "cp SRC DST",
// "write DST TEXT", "mkdir DIR" and "ln TARGET LINK" lines, enough to
// produce outputs without processes.
type fakeExec struct {
	mu    sync.Mutex
	calls map[string]int
	fail  map[string]bool
	here  bool // says it runs on this kernel (executor.Here), as the local executor does
}

func (f *fakeExec) RunsHere() bool { return f.here }

func (f *fakeExec) Run(ctx context.Context, job *executor.Job) (int, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[job.Phase]++
	fail := f.fail[job.Phase]
	f.mu.Unlock()
	if fail {
		fmt.Fprintln(job.Stderr, "boom")
		return 7, nil
	}
	for _, line := range strings.Split(job.Argv[2], ";") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "cp":
			b, err := os.ReadFile(filepath.Join(job.Dir, fields[1]))
			if err != nil {
				return 1, nil
			}
			if err := os.WriteFile(filepath.Join(job.Dir, fields[2]), b, 0o644); err != nil {
				return 1, nil
			}
		case "mkdir":
			if err := os.MkdirAll(filepath.Join(job.Dir, fields[1]), 0o755); err != nil {
				return 1, nil
			}
		case "ln": // ln TARGET LINK, a symlink
			if err := os.Symlink(fields[1], filepath.Join(job.Dir, fields[2])); err != nil {
				return 1, nil
			}
		case "write":
			if err := os.WriteFile(filepath.Join(job.Dir, fields[1]), []byte(strings.Join(fields[2:], " ")+"\n"), 0o644); err != nil {
				return 1, nil
			}
		}
	}
	return 0, nil
}

func (f *fakeExec) count(phase string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[phase]
}

type setup struct {
	dir   string
	cache *cache.Dir
	exec  *fakeExec
}

func newSetup(t testing.TB, files map[string]string) *setup {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := cache.Open(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	return &setup{dir: dir, cache: c, exec: &fakeExec{}}
}

func (s *setup) engine(t testing.TB, vars ...spec.VarValue) *Engine {
	t.Helper()
	sp, diags := spec.NewParser().LoadFile(filepath.Join(s.dir, "experiment.hcl"), spec.Options{Vars: vars})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return New(sp, tiered(s.cache), Config{Executor: s.exec})
}

func (s *setup) run(t *testing.T, opts RunOptions, vars ...spec.VarValue) *RunResult {
	t.Helper()
	res, err := s.engine(t, vars...).Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

const chainSpec = `
variable "greeting" {
  default = "hello"
}
phase "a" {
  command = "write a.txt ${var.greeting}"
  outputs = ["a.txt"]
}
phase "b" {
  command = "cp ${phase.a.outputs[0]} b.txt"
  outputs = ["b.txt"]
}
phase "c" {
  command = "cp in.txt c.txt"
  inputs  = ["in.txt"]
  outputs = ["c.txt"]
}
`

func TestRunCachesEveryPhase(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": chainSpec, "in.txt": "x\n"})
	res := s.run(t, RunOptions{})
	if diff := cmp.Diff(map[string]int{runrec.StatusSucceeded: 3}, res.Counts); diff != "" {
		t.Errorf("first run counts (-want +got):\n%s", diff)
	}
	res = s.run(t, RunOptions{})
	if diff := cmp.Diff(map[string]int{runrec.StatusCached: 3}, res.Counts); diff != "" {
		t.Errorf("second run counts (-want +got):\n%s", diff)
	}
	for _, p := range []string{"a", "b", "c"} {
		if n := s.exec.count(p); n != 1 {
			t.Errorf("phase %s ran %d times, want 1", p, n)
		}
	}
	// The state file records the second run's statuses.
	st, err := runrec.ReadState(filepath.Join(s.dir, ".cairn", "runs", res.RunID, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != runrec.RunSucceeded || st.Phases["b"].Status != runrec.StatusCached || len(st.Phases["b"].Key) != 64 {
		t.Errorf("state: status %s, b %+v", st.Status, st.Phases["b"])
	}
}

func TestEarlyCutoffAndRestore(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": chainSpec, "in.txt": "x\n"})
	s.run(t, RunOptions{})

	// Forcing a re-run of a with identical output leaves b cached.
	res := s.run(t, RunOptions{Request: runrec.Request{Gates: runrec.Gates{Force: []string{"a"}}}})
	if res.Counts[runrec.StatusSucceeded] != 1 || s.exec.count("a") != 2 || s.exec.count("b") != 1 {
		t.Errorf("force a: counts %v, a ran %d, b ran %d", res.Counts, s.exec.count("a"), s.exec.count("b"))
	}

	// A deleted output comes back from the cache without running.
	os.Remove(filepath.Join(s.dir, "b.txt"))
	res = s.run(t, RunOptions{})
	if res.Counts[runrec.StatusRestored] != 1 || s.exec.count("b") != 1 {
		t.Errorf("restore: counts %v, b ran %d", res.Counts, s.exec.count("b"))
	}
	if b, _ := os.ReadFile(filepath.Join(s.dir, "b.txt")); string(b) != "hello\n" {
		t.Errorf("restored b.txt = %q", b)
	}

	// A changed variable reruns a and b, not c.
	res = s.run(t, RunOptions{}, spec.VarValue{Name: "greeting", Value: "bye"})
	if res.Counts[runrec.StatusSucceeded] != 2 || res.Counts[runrec.StatusCached] != 1 {
		t.Errorf("var change counts %v", res.Counts)
	}
}

func TestFailureBlocksDependents(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": chainSpec, "in.txt": "x\n"})
	s.exec.fail = map[string]bool{"a": true}
	res := s.run(t, RunOptions{Request: runrec.Request{KeepGoing: true, Jobs: 1}})
	want := map[string]int{runrec.StatusFailed: 1, runrec.StatusBlocked: 1, runrec.StatusSucceeded: 1}
	if diff := cmp.Diff(want, res.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	perr, ok := res.Failures["a"].(*PhaseError)
	if !ok || perr.ExitCode != 7 || !strings.HasSuffix(perr.Log, "logs/a.stderr") || perr.Tail != "boom" {
		t.Errorf("failure = %#v", res.Failures["a"])
	}
	// Nothing of a failed phase is cached: fixed, it runs again.
	s.exec.fail = nil
	s.run(t, RunOptions{})
	if n := s.exec.count("a"); n != 2 {
		t.Errorf("a ran %d times, want 2", n)
	}
}

func TestPlanReasons(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": chainSpec, "in.txt": "x\n"})
	plan, err := s.engine(t).Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Run != 3 || plan.Decisions[0].Reasons[0] != "new phase" {
		t.Fatalf("plan = %+v", plan)
	}
	s.run(t, RunOptions{})
	os.WriteFile(filepath.Join(s.dir, "in.txt"), []byte("y\n"), 0o644)
	plan, err = s.engine(t, spec.VarValue{Name: "greeting", Value: "bye"}).Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, d := range plan.Decisions {
		got[d.Phase] = append([]string{string(d.Action)}, d.Reasons...)
	}
	want := map[string][]string{
		"a": {"run", `command changed: "write a.txt hello" → "write a.txt bye"`},
		"b": {"run", "upstream a will run"},
		"c": {"run", "input in.txt changed"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
}

func TestDiffComponents(t *testing.T) {
	base := []cache.Component{
		{Kind: kindCommand, Value: `["sh","-c","x"]`},
		{Kind: kindEnv, Name: "MODE", Value: "fast"},
		{Kind: kindInput, Name: "a.txt", Value: "-:00"},
		{Kind: kindInput, Name: "gone.txt", Value: "-:00"},
		{Kind: kindParam, Name: "rounds", Value: "20"},
		{Kind: kindUpstream, Name: "data/clean.jsonl", Value: "-:01"},
	}
	cur := []cache.Component{
		{Kind: kindCommand, Value: `["sh","-c","x"]`},
		{Kind: kindEnv, Name: "MODE", Value: "slow"},
		{Kind: kindInput, Name: "a.txt", Value: "-:99"},
		{Kind: kindInput, Name: "new.txt", Value: "-:00"},
		{Kind: kindParam, Name: "rounds", Value: "40"},
		{Kind: kindUpstream, Name: "data/clean.jsonl", Value: "-:02"},
	}
	got := diffComponents(base, cur, map[string]string{"data": "prepare"})
	want := []string{
		"env MODE changed",
		"input a.txt changed",
		"input new.txt added",
		"param rounds 20 → 40",
		"upstream prepare output data/clean.jsonl changed",
		"input gone.txt removed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
}

func TestUnknownPhase(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": chainSpec, "in.txt": "x\n"})
	_, err := s.engine(t).Run(t.Context(), RunOptions{Request: runrec.Request{Targets: []string{"bb"}}})
	if err == nil || !strings.Contains(err.Error(), `did you mean "b"?`) || !strings.Contains(err.Error(), "phases: a, b, c") {
		t.Errorf("err = %v", err)
	}
}

func TestMissingInput(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": chainSpec})
	res, err := s.engine(t).Run(t.Context(), RunOptions{Request: runrec.Request{Targets: []string{"c"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Failures["c"].Error(), `input "in.txt" does not exist and no phase produces it`) {
		t.Errorf("failure = %v", res.Failures["c"])
	}
	if s.exec.count("c") != 0 {
		t.Error("c ran despite its missing input")
	}
}

// TestRunHugeJobs: any -j is a limit, however large (one meaning "no
// limit"): nothing is sized by it.
func TestRunHugeJobs(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": chainSpec, "in.txt": "x\n"})
	for _, jobs := range []int{1 << 40, math.MaxInt} {
		os.Remove(filepath.Join(s.dir, "b.txt"))
		res := s.run(t, RunOptions{Request: runrec.Request{Jobs: jobs}})
		if res.Counts[runrec.StatusFailed] != 0 || res.Counts[runrec.StatusBlocked] != 0 {
			t.Errorf("-j %d: counts %v", jobs, res.Counts)
		}
	}
}

// local is c alone, without a remote cache level.
func tiered(c *cache.Dir) *remote.Tiered { return remote.NewTiered(c, nil, false, nil) }
