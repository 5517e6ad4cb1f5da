package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/runrec"
)

// TestHitInSessionBeforeRestore: whenever an output is restored from the
// cache, the hit of its entry is already in the run's session file, so a
// GC running meanwhile spares the blobs the restore reads (FORMAT.md,
// "Usage sessions"). Hits may wait in memory for a while; both paths that
// restore must write them first: a run restoring a deleted output, and
// --only restoring a phase outside the selection that it reads.
func TestHitInSessionBeforeRestore(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": chainSpec, "in.txt": "x\n"})
	first := s.run(t, RunOptions{})
	st, err := runrec.ReadState(filepath.Join(s.dir, ".cairn", "runs", first.RunID, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var restored []string
	checkHit := func(e *Engine, o string) {
		addr := strings.TrimSuffix(o, ".txt")
		restored = append(restored, addr)
		b, err := os.ReadFile(e.session.Path())
		if err != nil {
			t.Errorf("restoring %s: session file: %v", o, err)
			return
		}
		if line := "\nhit " + st.Phases[addr].Key + "\n"; !strings.Contains(string(b), line) {
			t.Errorf("restoring %s before its hit is in the session file:\n%s", o, b)
		}
	}
	run := func(opts RunOptions) {
		e := s.engine(t)
		e.out.BeforeRestore = func(o string) { checkHit(e, o) }
		if _, err := e.Run(t.Context(), opts); err != nil {
			t.Fatal(err)
		}
	}

	// A deleted output comes back from the cache.
	if err := os.Remove(filepath.Join(s.dir, "b.txt")); err != nil {
		t.Fatal(err)
	}
	run(RunOptions{})
	// --only b needs a's output, missing: it is restored from the cache.
	if err := os.Remove(filepath.Join(s.dir, "a.txt")); err != nil {
		t.Fatal(err)
	}
	run(RunOptions{Request: runrec.Request{Gates: runrec.Gates{Only: []string{"b"}}}})
	if diff := cmp.Diff([]string{"b", "a"}, restored); diff != "" {
		t.Errorf("restored phases (-want +got):\n%s", diff)
	}
}
