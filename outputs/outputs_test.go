package outputs

import (
	"os"
	"path/filepath"
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

func newKeeper(t *testing.T) *Keeper {
	t.Helper()
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace.New(t.TempDir())
	mem := memories.LoadMemory(filepath.Join(t.TempDir(), "digests"))
	return &Keeper{WS: &ws, Cache: remote.NewTiered(c, nil, false, nil), Mem: mem, Now: time.Now}
}

func write(t *testing.T, k *Keeper, rel, data string) {
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
	part := TreeOf(c.Tree, "out/d")
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
