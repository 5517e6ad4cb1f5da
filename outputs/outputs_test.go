package outputs

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/memories"
	"github.com/cairn-run/cairn/spec"
	"github.com/cairn-run/cairn/workspace"
)

func newKeeper(t testing.TB) *Keeper {
	t.Helper()
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace.New(t.TempDir())
	mem := memories.LoadMemory(filepath.Join(t.TempDir(), "digests"))
	return &Keeper{WS: &ws, Cache: remote.NewTiered(c, nil, false, nil), Mem: mem, Now: time.Now}
}

func write(t testing.TB, k *Keeper, rel, data string) {
	t.Helper()
	abs := k.WS.Abs(rel)
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCollectRestoreRoundTrip: what Collect stages comes back, byte for
// byte, through Restore, and Matches tells the workspace copy from a
// changed one.
func TestCollectRestoreRoundTrip(t *testing.T) {
	k := newKeeper(t)
	big := strings.Repeat("x", cache.InlineMax+1) // a blob, not inline
	write(t, k, "out/d/small.txt", "small\n")
	write(t, k, "out/d/big.txt", big)
	p := &spec.Phase{Addr: "a", Outputs: []spec.Output{{Name: "0", Path: "out/d"}}}
	c, err := k.Collect(p, true, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if err := CommitAll(c.Pend); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range c.Tree {
		paths = append(paths, f.Path)
	}
	if diff := cmp.Diff([]string{"out/d", "out/d/big.txt", "out/d/small.txt"}, paths); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	parts, problem := Split(&cache.Entry{Components: []cache.Component{{Kind: cache.KindOutput, Name: "0", Value: "out/d"}}, Outputs: c.Tree})
	if problem != "" {
		t.Fatal(problem)
	}
	part := parts["out/d"]
	if !k.Matches("out/d", part) {
		t.Error("Matches: false for the outputs just collected")
	}
	write(t, k, "out/d/small.txt", "changed\n")
	if k.Matches("out/d", part) {
		t.Error("Matches: true after an output changed")
	}
	if err := os.RemoveAll(k.WS.Abs("out")); err != nil {
		t.Fatal(err)
	}
	if err := k.Restore("out/d", part, c.Inline.Blobs); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"out/d/small.txt": "small\n", "out/d/big.txt": big} {
		if b, err := os.ReadFile(k.WS.Abs(rel)); err != nil || string(b) != want {
			t.Errorf("%s restored as %d bytes, %v; want %d bytes", rel, len(b), err, len(want))
		}
	}
	if !k.Matches("out/d", part) {
		t.Error("Matches: false after Restore")
	}
}

// TestPrepareRefusesSymlinkLeaving: a declared output's parent that is a
// symlink out of the workspace is neither written through nor emptied,
// and the error names it.
func TestPrepareRefusesSymlinkLeaving(t *testing.T) {
	k := newKeeper(t)
	outside := t.TempDir()
	victim := filepath.Join(outside, "a.txt")
	if err := os.WriteFile(victim, []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, k.WS.Abs("out")); err != nil {
		t.Fatal(err)
	}
	p := &spec.Phase{Addr: "a", Outputs: []spec.Output{{Name: "0", Path: "out/a.txt"}}}
	err := k.Prepare(p)
	if err == nil || !strings.Contains(err.Error(), `its parent "out" is a symlink to`) {
		t.Errorf("Prepare: %v; want an error naming the symlink out", err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "outside\n" {
		t.Errorf("file outside the workspace: %q, %v; want it untouched", b, err)
	}
}

func TestTreeProblem(t *testing.T) {
	out := func(path string) cache.Component {
		return cache.Component{Kind: cache.KindOutput, Name: path, Value: path}
	}
	file := func(path string) cache.OutputFile { return cache.OutputFile{Path: path, Type: "file"} }
	tests := []struct {
		name  string
		entry cache.Entry
		want  string
	}{
		{"file", cache.Entry{Components: []cache.Component{out("a.txt")}, Outputs: []cache.OutputFile{file("a.txt")}}, ""},
		{"dir", cache.Entry{Components: []cache.Component{out("d")}, Outputs: []cache.OutputFile{{Path: "d", Type: "dir"}, file("d/x")}}, ""},
		{"outside", cache.Entry{Components: []cache.Component{out("d")}, Outputs: []cache.OutputFile{{Path: "d", Type: "dir"}, file(".git/hooks/pre-commit")}},
			`lists ".git/hooks/pre-commit", outside the phase's declared outputs`},
		{"prefix is not inside", cache.Entry{Components: []cache.Component{out("d")}, Outputs: []cache.OutputFile{file("d"), file("dx")}},
			`lists "dx", outside the phase's declared outputs`},
		{"missing", cache.Entry{Components: []cache.Component{out("a.txt"), out("b.txt")}, Outputs: []cache.OutputFile{file("a.txt")}},
			`lacks the declared output "b.txt"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TreeProblem(&tt.entry); got != tt.want {
				t.Errorf("TreeProblem = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSplit: each path goes to the declared output that is it or one of
// its parents, whether or not the output's paths are one run of the sorted
// tree; a planted entry whose outputs overlap gives a path to both.
func TestSplit(t *testing.T) {
	out := func(path string) cache.Component {
		return cache.Component{Kind: cache.KindOutput, Name: path, Value: path}
	}
	file := func(path string) cache.OutputFile { return cache.OutputFile{Path: path, Type: "file"} }
	dir := func(path string) cache.OutputFile { return cache.OutputFile{Path: path, Type: "dir"} }
	tests := []struct {
		name  string
		entry cache.Entry
		want  Parts
	}{
		{"files", cache.Entry{Components: []cache.Component{out("b"), out("a")}, Outputs: []cache.OutputFile{file("a"), file("b")}},
			Parts{"a": {file("a")}, "b": {file("b")}}},
		{"sibling sorts inside a directory's run",
			cache.Entry{Components: []cache.Component{out("out"), out("out.txt")}, Outputs: []cache.OutputFile{dir("out"), file("out.txt"), file("out/a"), dir("out/d"), file("out/d/b")}},
			Parts{"out": {dir("out"), file("out/a"), dir("out/d"), file("out/d/b")}, "out.txt": {file("out.txt")}}},
		{"overlapping (planted)",
			cache.Entry{Components: []cache.Component{out("d"), out("d/e")}, Outputs: []cache.OutputFile{dir("d"), dir("d/e"), file("d/e/x")}},
			Parts{"d": {dir("d"), dir("d/e"), file("d/e/x")}, "d/e": {dir("d/e"), file("d/e/x")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problem := Split(&tt.entry)
			if problem != "" {
				t.Fatalf("Split: problem %q", problem)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Split (-want +got):\n%s", diff)
			}
		})
	}
}

// manyOutputs is an entry declaring n single-file outputs.
func manyOutputs(n int) *cache.Entry {
	e := &cache.Entry{}
	for i := range n {
		p := fmt.Sprintf("out/f%d", i)
		e.Components = append(e.Components, cache.Component{Kind: cache.KindOutput, Name: p, Value: p})
		e.Outputs = append(e.Outputs, cache.OutputFile{Path: p, Type: "file"})
	}
	sort.Slice(e.Outputs, func(i, j int) bool { return e.Outputs[i].Path < e.Outputs[j].Path })
	return e
}

// TestSplitScalesLinearly guards against a phase of many declared outputs
// costing the product of its outputs and paths: splitting 16 times the
// outputs must cost far less than 16 times as much per output. Allocations
// cannot tell (comparing every path with every output allocates nothing),
// so this compares the best of several runs at each size, with a margin
// wide enough for a loaded machine: linear is about 1x, quadratic 16x.
func TestSplitScalesLinearly(t *testing.T) {
	if testing.Short() {
		t.Skip("measures two sizes")
	}
	perOutput := func(n int) time.Duration {
		e := manyOutputs(n)
		best := time.Duration(math.MaxInt64)
		for range 5 {
			start := time.Now()
			if _, problem := Split(e); problem != "" {
				t.Fatal(problem)
			}
			best = min(best, time.Since(start))
		}
		return best / time.Duration(n)
	}
	small, large := perOutput(1000), perOutput(16000)
	if large > 4*small {
		t.Errorf("Split: %v per output for 16,000 outputs, %v for 1,000; want about the same", large, small)
	}
}

func BenchmarkSplit(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		e := manyOutputs(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				Split(e)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/output")
		})
	}
}

func TestMissingOutputsErrorListsTheFirstFew(t *testing.T) {
	var paths []string
	for i := range maxListedPaths + 2 {
		paths = append(paths, "out/"+string(rune('a'+i)))
	}
	got := (&MissingOutputsError{Phase: "a", Paths: paths}).Error()
	want := `phase a exited 0 but did not produce declared output "out/a", "out/b", "out/c", "out/d", "out/e", "out/f", "out/g", "out/h", "out/i", "out/j", and 2 more`
	if got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
}
