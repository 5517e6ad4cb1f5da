package engine

import (
	"fmt"
	"github.com/cairn-run/cairn/internal/testkit"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/inputs"
	"github.com/cairn-run/cairn/memories"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/workspace"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// calmFiles is testkit.CalmFiles.
func calmFiles(t testing.TB, dir string, names ...string) {
	t.Helper()
	testkit.CalmFiles(t, dir, names...)
}

const phaseKeysSpec = `
phase "a" {
  command = "cp in.txt a.txt"
  inputs  = ["in.txt", "lib"]
  outputs = ["a.txt"]
}
phase "b" {
  command = "cp ${phase.a.outputs[0]} b.txt"
  inputs  = ["tool.sh", "*.cfg"]
  outputs = ["b.txt"]
}
`

// TestPhaseKeysNoOp: a second no-op run takes every key from the
// phase-key memory (also that of the phase whose input is a directory:
// walking it stats its files), and decides exactly as a full computation
// does.
func TestPhaseKeysNoOp(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": phaseKeysSpec, "in.txt": "x\n", "lib/m.py": "m\n", "tool.sh": "t\n", "x.cfg": "c\n"})
	calmFiles(t, s.dir, "in.txt", "lib/m.py", "tool.sh", "x.cfg")
	s.run(t, RunOptions{}) // records the keys
	e := s.engine(t)
	plan, err := e.Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.phaseKeys.Hits(); got != 2 {
		t.Errorf("phase-key memory answered %d phases, want 2 (a, with a directory input, and b)", got)
	}
	// The same plan, and the same why, without the memory.
	full := s.engine(t)
	full.phaseKeys = nil
	want, err := full.Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := cmp.Options{cmp.AllowUnexported(Decision{}), cmpopts.IgnoreFields(Decision{}, "entry", "seen", "keyed"), cmpopts.EquateEmpty()}
	if diff := cmp.Diff(want, plan, opts); diff != "" {
		t.Errorf("plan with the phase-key memory (-full +memory):\n%s", diff)
	}
	whyMem, err := s.engine(t).Why([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	noMem := s.engine(t)
	noMem.phaseKeys = nil
	whyFull, err := noMem.Why([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(whyFull, whyMem); diff != "" {
		t.Errorf("why with the phase-key memory (-full +memory):\n%s", diff)
	}
}

// TestPhaseKeysSeeChanges: after keys were remembered, every kind of
// change reruns the phase, as without the memory: a same-size edit with
// the mtime put back, a new file matching a glob, a mode change, a
// changed command, a changed upstream output.
func TestPhaseKeysSeeChanges(t *testing.T) {
	files := map[string]string{"experiment.hcl": phaseKeysSpec, "in.txt": "x\n", "lib/m.py": "m\n", "lib/deep/er/x.py": "x\n", "tool.sh": "t\n", "x.cfg": "c\n"}
	calm := []string{"in.txt", "lib/m.py", "lib/deep/er/x.py", "tool.sh", "x.cfg"}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dir string)
		reruns []string
	}{
		{"same-size edit, mtime put back", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "tool.sh")
			fi, err := os.Stat(p)
			must(t, err)
			must(t, os.WriteFile(p, []byte("T\n"), 0o644))
			must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
		}, []string{"b"}},
		{"new file matching a glob", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "y.cfg"), []byte("y\n"), 0o644))
			calmFiles(t, dir, "y.cfg")
		}, []string{"b"}},
		{"executable bit", func(t *testing.T, dir string) {
			must(t, os.Chmod(filepath.Join(dir, "tool.sh"), 0o755))
		}, []string{"b"}},
		{"command", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "experiment.hcl"), []byte(strings.Replace(phaseKeysSpec, "b.txt\"\n", "b.txt \"\n", 1)), 0o644))
		}, []string{"b"}},
		// A directory input: an edit anywhere below it is seen. Its
		// files are the key's, by path, content and executable bit; an
		// empty directory holds none and does not change the key.
		{"deep file in a directory, same size, mtime put back", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "lib/deep/er/x.py")
			fi, err := os.Stat(p)
			must(t, err)
			must(t, os.WriteFile(p, []byte("X\n"), 0o644))
			must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
		}, []string{"a"}},
		{"file renamed in a directory", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "lib/deep/er/x.py"), filepath.Join(dir, "lib/deep/er/y.py")))
		}, []string{"a"}},
		{"file deleted from a directory", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "lib/deep/er/x.py")))
		}, []string{"a"}},
		{"executable bit in a directory", func(t *testing.T, dir string) {
			must(t, os.Chmod(filepath.Join(dir, "lib/deep/er/x.py"), 0o755))
		}, []string{"a"}},
		{"new file deep in a directory", func(t *testing.T, dir string) {
			must(t, os.MkdirAll(filepath.Join(dir, "lib/new/sub"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "lib/new/sub/z.py"), []byte("z\n"), 0o644))
			calmFiles(t, dir, "lib/new/sub/z.py")
		}, []string{"a"}},
		{"new empty directory (not in the key)", func(t *testing.T, dir string) {
			must(t, os.MkdirAll(filepath.Join(dir, "lib/empty"), 0o755))
		}, nil},
		{"upstream output", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "in.txt"), []byte("other\n"), 0o644))
			calmFiles(t, dir, "in.txt")
		}, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSetup(t, files)
			calmFiles(t, s.dir, calm...)
			s.run(t, RunOptions{})
			e0 := s.engine(t)
			if _, err := e0.Plan(PlanOptions{}); err != nil {
				t.Fatal(err)
			}
			if e0.phaseKeys.Hits() != 2 {
				t.Fatalf("phase keys not taken from the memory before the change")
			}
			before := map[string]int{"a": s.exec.count("a"), "b": s.exec.count("b")}
			tc.change(t, s.dir)
			e := s.engine(t)
			if _, err := e.Run(t.Context(), RunOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"a", "b"} {
				want := before[p]
				for _, r := range tc.reruns {
					if r == p {
						want++
					}
				}
				if got := s.exec.count(p); got != want {
					t.Errorf("phase %s ran %d times, want %d", p, got, want)
				}
			}
			// And the run after that is a no-op again.
			n := s.exec.count("b")
			s.run(t, RunOptions{})
			if s.exec.count("b") != n {
				t.Errorf("phase b ran again on a no-op")
			}
		})
	}
}

// TestPhaseKeysRacy: keys computed while inputs are racy (modified
// within the racy window of the computation) are remembered with those
// inputs, and the next run takes them from the memory after hashing those
// inputs alone again: the run after an edit is a no-op.
func TestPhaseKeysRacy(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": phaseKeysSpec, "in.txt": "x\n", "lib/m.py": "m\n", "lib/n.py": "n\n", "tool.sh": "t\n", "x.cfg": "c\n"})
	calmFiles(t, s.dir, "lib/n.py", "tool.sh", "x.cfg")
	// These inputs' mtimes are an hour ahead, so they are racy
	// throughout: files merely written just now turn calm once the run
	// takes longer than the racy window (50 ms), which a loaded machine
	// exceeds, and the test would pass without remembering anything.
	soon := time.Now().Add(time.Hour)
	for _, n := range []string{"in.txt", "lib/m.py"} {
		if err := os.Chtimes(filepath.Join(s.dir, n), soon, soon); err != nil {
			t.Fatal(err)
		}
	}
	s.run(t, RunOptions{})
	e := s.engine(t)
	plan, err := e.Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range plan.Decisions {
		if d.Action != ActionCached {
			t.Errorf("phase %s: %s %v, want cached", d.Phase, d.Action, d.Reasons)
		}
	}
	if got := e.phaseKeys.Hits(); got != 2 {
		t.Errorf("phase-key memory answered %d phases, want 2", got)
	}
	_, _, racy, _ := e.phaseKeys.Entry("a")
	var paths []string
	for _, r := range racy {
		paths = append(paths, r.Path)
	}
	if diff := cmp.Diff([]string{"in.txt", "lib/m.py"}, paths); diff != "" {
		t.Errorf("racy inputs remembered for phase a (-want +got):\n%s", diff)
	}
}

// TestPhaseKeysRacyEditSeen: an input racy when its phase's key was
// remembered, edited afterwards within the same timestamp tick (so it
// keeps its stat: size, mtime, ctime, inode and mode), is hashed again and
// its edit seen, though the fingerprint is unchanged and the digest memory
// holds the old content for that stat.
func TestPhaseKeysRacyEditSeen(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": phaseKeysSpec, "in.txt": "x\n", "lib/m.py": "m\n", "tool.sh": "t\n", "x.cfg": "c\n"})
	calmFiles(t, s.dir, "lib/m.py", "tool.sh", "x.cfg")
	soon := time.Now().Add(time.Hour) // racy throughout (see TestPhaseKeysRacy)
	must(t, os.Chtimes(filepath.Join(s.dir, "in.txt"), soon, soon))
	s.run(t, RunOptions{})
	e := s.engine(t)
	_, key, racy, ok := e.phaseKeys.Entry("a")
	if !ok || len(racy) != 1 || racy[0].Path != "in.txt" {
		t.Fatalf("phase a remembered: %v, racy inputs %+v; want in.txt racy", ok, racy)
	}
	// The edit, as a filesystem whose timestamp tick is longer than the
	// time since the run would leave it: same size, new content, and a
	// stat no different from the one remembered. A real filesystem gives
	// it another ctime, so the memories are made to say what they would
	// say then: the fingerprint of the edited inputs, and the old digest
	// for the stat in.txt now has, recorded within the tick.
	must(t, os.WriteFile(filepath.Join(s.dir, "in.txt"), []byte("y\n"), 0o644))
	must(t, os.Chtimes(filepath.Join(s.dir, "in.txt"), soon, soon))
	g, err := e.gather(e.spec.Phase("a"), nil)
	must(t, err)
	fp := e.fingerprint(g)
	st, err := workspace.StatPath(filepath.Join(s.dir, "in.txt"))
	must(t, err)
	racy[0].Stat = st
	e.phaseKeys.Record("a", fp, key, racy)
	e.mem.Record("in.txt", st, racy[0].Digest, time.Now())

	plan, err := e.Plan(PlanOptions{})
	must(t, err)
	full := s.engine(t)
	full.phaseKeys = nil
	want, err := full.Plan(PlanOptions{})
	must(t, err)
	type decided struct {
		Action  Action
		Reasons []string
		Key     string
	}
	got, wantA := decided{}, decided{Action: ActionRun, Reasons: []string{"input in.txt changed"}}
	for i, d := range plan.Decisions {
		if d.Phase == "a" {
			got = decided{d.Action, d.Reasons, d.Key}
			wantA.Key = want.Decisions[i].Key
		}
	}
	if diff := cmp.Diff(wantA, got); diff != "" {
		t.Errorf("phase a after a same-tick edit of its racy input (-want +got):\n%s", diff)
	}
	if e.phaseKeys.Hits() != 0 { // b's key waits for a
		t.Errorf("phase-key memory answered %d phases, want none", e.phaseKeys.Hits())
	}
}

// TestPhaseKeysNoInputs: a phase without input files is not kept in the
// memory (its key costs what its fingerprint would), and is decided
// cached as before; one with inputs still is.
func TestPhaseKeysNoInputs(t *testing.T) {
	spec := phaseKeysSpec + `
phase "c" {
  command = "write c.txt c"
  outputs = ["c.txt"]
}
`
	s := newSetup(t, map[string]string{"experiment.hcl": spec, "in.txt": "x\n", "lib/m.py": "m\n", "tool.sh": "t\n", "x.cfg": "c\n"})
	calmFiles(t, s.dir, "in.txt", "lib/m.py", "tool.sh", "x.cfg")
	s.run(t, RunOptions{})
	e := s.engine(t)
	plan, err := e.Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range plan.Decisions {
		if d.Action != ActionCached {
			t.Errorf("phase %s: %s %v, want cached", d.Phase, d.Action, d.Reasons)
		}
	}
	if _, _, _, ok := e.phaseKeys.Entry("c"); ok {
		t.Errorf("phase c, without input files, is in the phase-key memory")
	}
	if _, _, _, ok := e.phaseKeys.Entry("b"); !ok {
		t.Errorf("phase b, with input files, is not in the phase-key memory")
	}
	if got := e.phaseKeys.Hits(); got != 2 {
		t.Errorf("phase-key memory answered %d phases, want 2 (a and b)", got)
	}
}

// TestPhaseKeysNoInputsAsFull: phases without input files (one reading
// an upstream output, one with cache = false, one forced, one changed
// since its run) are decided, and explained by why, exactly as without
// the memory, also when the memory holds entries for them that an older
// run recorded (here: another phase's key, which has a cached entry).
func TestPhaseKeysNoInputsAsFull(t *testing.T) {
	spec := phaseKeysSpec + `
phase "c" {
  command = "cp ${phase.b.outputs[0]} c.txt"
  outputs = ["c.txt"]
}
phase "d" {
  command = "write d.txt d"
  outputs = ["d.txt"]
  cache   = false
}
phase "e" {
  command = "write e.txt e"
  outputs = ["e.txt"]
}
phase "f" {
  command = "write f.txt f"
  outputs = ["f.txt"]
}
`
	s := newSetup(t, map[string]string{"experiment.hcl": spec, "in.txt": "x\n", "lib/m.py": "m\n", "tool.sh": "t\n", "x.cfg": "c\n"})
	calmFiles(t, s.dir, "in.txt", "lib/m.py", "tool.sh", "x.cfg")
	s.run(t, RunOptions{})
	changed := strings.Replace(spec, "write f.txt f", "write f.txt g", 1)
	if err := os.WriteFile(filepath.Join(s.dir, "experiment.hcl"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := PlanOptions{Gates: runrec.Gates{Force: []string{"e"}}}
	mem := s.engine(t)
	_, bKey, _, ok := mem.phaseKeys.Entry("b")
	if !ok {
		t.Fatal("phase b is not in the phase-key memory")
	}
	for _, addr := range []string{"c", "d", "e", "f"} {
		mem.phaseKeys.Record(addr, [32]byte{9}, bKey, nil) // a key with an entry, not theirs
	}
	plan, err := mem.Plan(opts)
	if err != nil {
		t.Fatal(err)
	}
	full := s.engine(t)
	full.phaseKeys = nil
	want, err := full.Plan(opts)
	if err != nil {
		t.Fatal(err)
	}
	cmpOpts := cmp.Options{cmp.AllowUnexported(Decision{}), cmpopts.IgnoreFields(Decision{}, "entry", "seen", "keyed"), cmpopts.EquateEmpty()}
	if diff := cmp.Diff(want, plan, cmpOpts); diff != "" {
		t.Errorf("plan with the phase-key memory (-full +memory):\n%s", diff)
	}
	actions := map[string]Action{}
	for _, d := range plan.Decisions {
		actions[d.Phase] = d.Action
	}
	if diff := cmp.Diff(map[string]Action{"a": ActionCached, "b": ActionCached, "c": ActionCached, "d": ActionRun, "e": ActionRun, "f": ActionRun}, actions); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	whyMem, err := s.engine(t).Why([]string{"c", "d", "f"})
	if err != nil {
		t.Fatal(err)
	}
	noMem := s.engine(t)
	noMem.phaseKeys = nil
	whyFull, err := noMem.Why([]string{"c", "d", "f"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(whyFull, whyMem); diff != "" {
		t.Errorf("why with the phase-key memory (-full +memory):\n%s", diff)
	}
}

// TestPhaseKeysStaleEntry: a memory naming a key that the phase's
// components do not give (which no honest file holds) is caught at the
// miss, and the phase is decided in full.
func TestPhaseKeysStaleEntry(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": phaseKeysSpec, "in.txt": "x\n", "lib/m.py": "m\n", "tool.sh": "t\n", "x.cfg": "c\n"})
	calmFiles(t, s.dir, "in.txt", "lib/m.py", "tool.sh", "x.cfg")
	s.run(t, RunOptions{})
	e := s.engine(t)
	fp, _, _, _ := e.phaseKeys.Entry("b")
	e.phaseKeys.Record("b", fp, cache.ActionID{1}, nil)
	plan, err := e.Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range plan.Decisions {
		if d.Action != ActionCached {
			t.Errorf("phase %s: %s %v, want cached", d.Phase, d.Action, d.Reasons)
		}
	}
	if _, got, _, _ := e.phaseKeys.Entry("b"); got == (cache.ActionID{1}) {
		t.Errorf("stale key kept")
	}
}

// TestPhaseKeysDebugKey: with CAIRN_DEBUG_KEY=1 every key is computed
// (and so written out), none taken from the memory.
func TestPhaseKeysDebugKey(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": phaseKeysSpec, "in.txt": "x\n", "lib/m.py": "m\n", "tool.sh": "t\n", "x.cfg": "c\n"})
	calmFiles(t, s.dir, "in.txt", "lib/m.py", "tool.sh", "x.cfg")
	s.run(t, RunOptions{})
	t.Setenv("CAIRN_DEBUG_KEY", "1")
	if e := s.engine(t); e.phaseKeys != nil {
		t.Errorf("phase-key memory used with CAIRN_DEBUG_KEY=1")
	}
}

// TestPhaseKeysManyEnvAndParams: a phase with several env entries, params
// and env reads (maps, which Go iterates in a random order) is
// remembered run after run: its fingerprint does not depend on the order
// of a map.
func TestPhaseKeysManyEnvAndParams(t *testing.T) {
	const src = `
variable "lr" {
  default = "0.1"
}
phase "a" {
  command = "cp in.txt a.txt"
  inputs  = ["in.txt"]
  outputs = ["a.txt"]
  env     = { MODE = "fast", LEVEL = "3", COLOUR = "never", TZ = "UTC" }
  params  = { lr = var.lr, model = "m1", seed = 7, layers = [1, 2] }
}
`
	s := newSetup(t, map[string]string{"experiment.hcl": src, "in.txt": "x\n"})
	calmFiles(t, s.dir, "in.txt")
	s.run(t, RunOptions{})
	for i := range 8 {
		e := s.engine(t)
		plan, err := e.Plan(PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Decisions) != 1 || plan.Decisions[0].Action != ActionCached {
			t.Fatalf("plan %d: %+v, want a cached", i, plan.Decisions)
		}
		if got := e.phaseKeys.Hits(); got != 1 {
			t.Fatalf("plan %d: phase-key memory answered %d phases, want 1", i, got)
		}
	}
}

// TestRacyInputsListed: what a key is remembered with: the inputs racy
// when it was computed, each with the digest its component holds; nothing
// (the key is not remembered) when that digest cannot be read back or too
// many inputs are racy.
func TestRacyInputsListed(t *testing.T) {
	const now = int64(1_800_000_000_123_456_789)
	calm := workspace.FileStat{Size: 1, MTime: now - 3600e9, CTime: now - 3600e9, Ino: 1, Mode: 0o644}
	racy := workspace.FileStat{Size: 1, MTime: now - 1e6, CTime: now - 1e6, Ino: 2, Mode: 0o755}
	d := cache.HashBytes([]byte("x"))
	input := func(rel, value string) cache.Component {
		return cache.Component{Kind: kindInput, Name: rel, Value: value}
	}
	type racyCase struct {
		name  string
		fpOK  bool
		files []inputs.File
		comps []cache.Component
		want  []memories.RacyInput
		none  bool // not remembered at all
	}
	many := func(name string, n int) racyCase {
		c := racyCase{name: name, fpOK: true, none: n > maxRacy}
		for i := range n {
			rel := fmt.Sprintf("f%04d", i)
			c.files = append(c.files, inputs.File{Rel: rel, St: racy})
			c.comps = append(c.comps, input(rel, fileValue(d, racy.Mode)))
			c.want = append(c.want, memories.RacyInput{Path: rel, Stat: racy, Digest: d})
		}
		return c
	}
	tests := []racyCase{
		{"all calm", true, []inputs.File{{Rel: "a", St: calm}}, []cache.Component{input("a", fileValue(d, calm.Mode))}, nil, false},
		{"one racy", true,
			[]inputs.File{{Rel: "a", St: calm}, {Rel: "b", St: racy}},
			[]cache.Component{{Kind: kindCommand, Value: "[]"}, input("a", fileValue(d, calm.Mode)), input("b", fileValue(d, racy.Mode))},
			[]memories.RacyInput{{Path: "b", Stat: racy, Digest: d}}, false},
		{"racy input's value redacted", true, []inputs.File{{Rel: "b", St: racy}}, []cache.Component{input("b", "x:(sensitive 0123)")}, nil, true},
		{"racy input's name redacted", true, []inputs.File{{Rel: "b", St: racy}}, []cache.Component{input("(sensitive 0123)", fileValue(d, racy.Mode))}, nil, true},
		{"no fingerprint", false, []inputs.File{{Rel: "a", St: calm}}, []cache.Component{input("a", fileValue(d, calm.Mode))}, nil, true},
	}
	tests = append(tests, many("as many racy as listed at most", maxRacy), many("one racy too many", maxRacy+1))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := keying{began: now, fpOK: tt.fpOK, g: &gathered{Files: tt.files}, comps: tt.comps}
			seen := k.racyInputs()
			if (seen == nil) != tt.none {
				t.Fatalf("remembered: %v, want %v", seen != nil, !tt.none)
			}
			if seen == nil {
				return
			}
			if diff := cmp.Diff(tt.want, seen.racy, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("racy inputs (-want +got):\n%s", diff)
			}
		})
	}
}
