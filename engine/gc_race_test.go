package engine

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache/upkeep"
	"github.com/cairn-run/cairn/runrec"
)

// TestGCBetweenDecideAndRestore: a cairn cache gc that runs, whole, after
// a run has decided to restore a phase's output and before it reads the
// blobs, evicting every entry older than its --max-age, spares what the
// run is about to restore: the output comes back from the cache and the
// phase does not run again.
func TestGCBetweenDecideAndRestore(t *testing.T) {
	const spec = `
phase "c" {
  command = "cp in.txt c.txt"
  inputs  = ["in.txt"]
  outputs = ["c.txt"]
}
`
	big := strings.Repeat("0123456789abcdef", 1024) // over cache.InlineMax: a blob in cas/
	s := newSetup(t, map[string]string{"experiment.hcl": spec, "in.txt": big})
	s.run(t, RunOptions{})
	if err := os.Remove(filepath.Join(s.dir, "c.txt")); err != nil {
		t.Fatal(err)
	}
	// Everything in the cache, the first run's session included, was last
	// used two days ago.
	old := time.Now().Add(-48 * time.Hour)
	for _, dir := range []string{"ac", "cas", "sessions"} {
		err := filepath.WalkDir(filepath.Join(s.cache.Root(), dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Chtimes(p, old, old)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var gcReport *upkeep.GCReport
	testHookRestoreDecided = func(e *Engine, addr string) {
		rep, err := upkeep.GC(s.cache, upkeep.GCOptions{MaxAge: 24 * time.Hour})
		if err != nil {
			t.Errorf("gc: %v", err)
		}
		gcReport = rep
	}
	t.Cleanup(func() { testHookRestoreDecided = nil })

	res := s.run(t, RunOptions{})
	if gcReport == nil {
		t.Fatal("no restore was decided")
	}
	// The entry, older than --max-age, is spared only because the run
	// uses it.
	if gcReport.Protected != 1 || gcReport.EntriesRemoved != 0 {
		t.Errorf("gc protected %d entries and removed %d, want 1 and 0", gcReport.Protected, gcReport.EntriesRemoved)
	}
	st, err := runrec.ReadState(filepath.Join(s.dir, ".cairn", "runs", res.RunID, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for addr, ps := range st.Phases {
		got[addr] = ps.Status
	}
	want := map[string]string{"c": runrec.StatusRestored}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if n := s.exec.count("c"); n != 1 {
		t.Errorf("phase c ran %d times, want once (the first run)", n)
	}
	b, err := os.ReadFile(filepath.Join(s.dir, "c.txt"))
	if err != nil || string(b) != big {
		t.Errorf("c.txt not restored: %v", err)
	}
}
