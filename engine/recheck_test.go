package engine

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/workspace"
)

// TestInputsChanged checks what inputsChanged says after each kind of edit
// made between a phase's decision and the end of its command: a plain
// file, a directory and a glob, each expanded again as the key was.
func TestInputsChanged(t *testing.T) {
	const specText = `
phase "p" {
  command = "write out.txt x"
  inputs  = ["in.txt", "data/", "glob/*.txt"]
  outputs = ["out.txt"]
}
`
	write := func(name, content string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name string
		edit func(t *testing.T, dir string)
		want []string
	}{
		{"nothing", func(*testing.T, string) {}, nil},
		// The stat moves, the content does not: hashed, and unchanged.
		{"same bytes rewritten", write("in.txt", "in\n"), nil},
		{"file edited", write("in.txt", "edited\n"), []string{"input in.txt changed"}},
		// Likely within the timestamp tick of the decision: the same
		// stat, but racy, so hashed again.
		{"file edited, same size", write("in.txt", "IN\n"), []string{"input in.txt changed"}},
		{"file removed", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "in.txt")); err != nil {
				t.Fatal(err)
			}
		}, []string{"input in.txt removed"}},
		{"executable bit set", func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, "in.txt"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, []string{"input in.txt changed"}},
		{"file added to a directory", write("data/c.txt", "c\n"), []string{"input data/c.txt added"}},
		{"file in a directory edited", write("data/sub/b.txt", "B\n"), []string{"input data/sub/b.txt changed"}},
		{"file removed from a directory", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "data/a.txt")); err != nil {
				t.Fatal(err)
			}
		}, []string{"input data/a.txt removed"}},
		{"file matching a glob added", write("glob/z.txt", "z\n"), []string{"input glob/z.txt added"}},
		{"file not matching a glob added", write("glob/z.csv", "z\n"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSetup(t, map[string]string{
				"experiment.hcl": specText,
				"in.txt":         "in\n",
				"data/a.txt":     "a\n",
				"data/sub/b.txt": "b\n",
				"glob/y.txt":     "y\n",
			})
			e := s.engine(t)
			p := e.spec.Phase("p")
			d, err := e.decide(p, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(t, s.dir)
			got := e.inputsChanged(p, d, nil)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("inputsChanged (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInputsChangedSameStat: an input racy when its phase was decided,
// edited during the command within the same timestamp tick (so with the
// stat it had: the fingerprint of the inputs is the same), is hashed again
// and its edit reported; the inputs' stats alone vouch for the others.
func TestInputsChangedSameStat(t *testing.T) {
	const specText = `
phase "p" {
  command = "write out.txt x"
  inputs  = ["in.txt", "data/"]
  outputs = ["out.txt"]
}
`
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{"same bytes", "in\n", nil},
		{"edited, same size", "IN\n", []string{"input in.txt changed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSetup(t, map[string]string{"experiment.hcl": specText, "in.txt": "in\n", "data/a.txt": "a\n"})
			calmFiles(t, s.dir, "data/a.txt")
			in := filepath.Join(s.dir, "in.txt")
			soon := time.Now().Add(time.Hour) // racy throughout
			must(t, os.Chtimes(in, soon, soon))
			e := s.engine(t)
			p := e.spec.Phase("p")
			d, err := e.decide(p, nil, false)
			must(t, err)
			if d.seen == nil || len(d.seen.racy) != 1 {
				t.Fatalf("decision saw %+v, want in.txt racy", d.seen)
			}
			must(t, os.WriteFile(in, []byte(tt.content), 0o644))
			must(t, os.Chtimes(in, soon, soon))
			// What a filesystem of a coarse tick would show: in.txt with
			// the stat it had at the decision, and the digest memory
			// holding the old content for that stat (recorded within
			// the tick).
			st, err := workspace.StatPath(in)
			must(t, err)
			g, err := e.gather(p, nil)
			must(t, err)
			d.seen.fp = e.fingerprint(g)
			d.seen.racy[0].Stat = st
			e.mem.Record("in.txt", st, d.seen.racy[0].Digest, time.Now())
			if diff := cmp.Diff(tt.want, e.inputsChanged(p, d, nil)); diff != "" {
				t.Errorf("inputsChanged (-want +got):\n%s", diff)
			}
		})
	}
}
