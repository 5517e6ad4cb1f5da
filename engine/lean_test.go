package engine

import (
	"bytes"
	"crypto/rand"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

const leanSpec = `
phase "a" {
  command = "cp big.bin a.bin"
  inputs  = ["big.bin"]
  outputs = ["a.bin"]
  env     = { MODE = "fast" }
}
phase "b" {
  command = "write b.bin made from ${phase.a.outputs[0]}"
  outputs = ["b.bin"]
}
`

// leanSetup runs leanSpec twice, so that the entry memo holds both
// phases' entries, trusted: the first run stores them, the second reads
// them in full once their files are clearly older than the memo's racy
// slack (it waits for that, by the files' ctime, not a guess).
func leanSetup(t *testing.T) *setup {
	t.Helper()
	big := make([]byte, 3*cache.InlineMax) // stored in cas/, not inline
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	s := newSetup(t, map[string]string{"experiment.hcl": leanSpec, "big.bin": string(big)})
	calmFiles(t, s.dir, "big.bin")
	s.run(t, RunOptions{})
	var newest time.Time
	err := filepath.WalkDir(s.cache.Root(), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if c := time.Unix(st.Ctim.Sec, st.Ctim.Nsec); c.After(newest) {
			newest = c
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(newest.Add(100 * time.Millisecond)))
	s.run(t, RunOptions{}) // reads the entries in full: the memo records them
	return s
}

// TestLeanEntriesWhy: a phase found cached through the memo, whose entries
// keep only their outputs' components, is explained by cairn why exactly
// as with every entry read whole.
func TestLeanEntriesWhy(t *testing.T) {
	s := leanSetup(t)
	e := s.engine(t)
	lean, err := e.Why([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if e.entries.Hits() == 0 {
		t.Fatal("no entry came from the memo: the test exercises nothing")
	}
	whole := s.engine(t)
	s.cache.UseEntryMemo(nil)
	want, err := whole.Why([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, lean); diff != "" {
		t.Errorf("why with lean entries (-whole +lean):\n%s", diff)
	}
	for _, w := range lean {
		if len(w.Fields) < 3 {
			t.Errorf("why %s: %d fields, want the command, env, output and inputs", w.Phase, len(w.Fields))
		}
	}
}

// TestLeanEntryRestoreFailsRuns: when the outputs of a phase found cached
// through the memo cannot be restored (a damaged blob), the phase runs
// and its result is stored under its key with every component, not the
// lean entry's few.
func TestLeanEntryRestoreFailsRuns(t *testing.T) {
	s := leanSetup(t)
	want, err := os.ReadFile(filepath.Join(s.dir, "a.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(s.dir, "a.bin")); err != nil {
		t.Fatal(err)
	}
	// Damage the cas/ blob holding a.bin.
	damaged := 0
	err = filepath.WalkDir(filepath.Join(s.cache.Root(), "cas"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, want) {
			return err
		}
		b[len(b)/2] ^= 1
		if err := os.Chmod(p, 0o644); err != nil {
			return err
		}
		damaged++
		return os.WriteFile(p, b, 0o444)
	})
	if err != nil || damaged != 1 {
		t.Fatalf("damaged %d blobs (%v), want 1", damaged, err)
	}
	sp, diags := spec.NewParser().LoadFile(filepath.Join(s.dir, "experiment.hcl"), spec.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	log := &eventLog{}
	e := New(sp, tiered(s.cache), Config{Executor: s.exec, Reporter: log})
	res, err := e.Run(t.Context(), RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e.entries.Hits() == 0 {
		t.Fatal("no entry came from the memo: the test exercises nothing")
	}
	// One warning, the failed restore; none that the result could not
	// be cached.
	if w := log.take(); len(w) != 1 || !strings.Contains(w[0], "restore failed, running it instead") {
		t.Errorf("warnings %q, want only the failed restore", w)
	}
	st, err := runrec.ReadState(e.ws.Records().StatePath(res.RunID))
	if err != nil {
		t.Fatal(err)
	}
	a := st.Phases["a"]
	if res.Status != runrec.RunSucceeded || a.Status != runrec.StatusSucceeded {
		t.Fatalf("run %s, phase a %s; want a run (not a restore) after the failed restore", res.Status, a.Status)
	}
	if got, err := os.ReadFile(filepath.Join(s.dir, "a.bin")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("a.bin after the run: %v, want its content back", err)
	}
	key, err := cache.ParseActionID(a.Key)
	if err != nil {
		t.Fatal(err)
	}
	s.cache.UseEntryMemo(nil)
	entry, err := s.cache.GetEntry(key)
	if err != nil {
		t.Fatalf("a's entry after the run: %v", err)
	}
	if cache.ComputeKey(entry.Components) != key || len(entry.Components) < 4 {
		t.Errorf("a's entry has %d components, not hashing to its key", len(entry.Components))
	}
	// And the next run finds everything in place.
	if res := s.run(t, RunOptions{}); res.Counts[runrec.StatusCached] != 2 {
		t.Errorf("next run: %v, want both phases cached", res.Counts)
	}
}
