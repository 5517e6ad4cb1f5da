package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/inputs"
	"github.com/cairn-run/cairn/memories"
	"github.com/cairn-run/cairn/workspace"
)

// TestRacyInputEditedAfterRun: a run, then at once a same-size edit of an
// input, then a run again: the phase must rerun and see the new content,
// every time.
func TestRacyInputEditedAfterRun(t *testing.T) {
	rounds := 30
	if longTier() {
		rounds = 300
	}
	s := newSetup(t, map[string]string{"experiment.hcl": chainSpec, "in.txt": "0000\n"})
	s.run(t, RunOptions{})
	stale := 0
	for i := 1; i <= rounds; i++ {
		want := fmt.Sprintf("%04d\n", i)
		if err := os.WriteFile(filepath.Join(s.dir, "in.txt"), []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		s.run(t, RunOptions{})
		if b, _ := os.ReadFile(filepath.Join(s.dir, "c.txt")); string(b) != want {
			stale++
			t.Errorf("round %d: c.txt = %q after in.txt became %q", i, b, want)
		}
	}
	if n := s.exec.count("c"); n != rounds+1 {
		t.Errorf("phase c ran %d times, want %d", n, rounds+1)
	}
	t.Logf("FIGURE T32 run_rounds=%d stale_hits=%d", rounds, stale)
}

// TestRacyRuleCtime: a file rewritten with its mtime put back (cp -p,
// rsync -a, tar x, touch -d) has an old mtime but a ctime of the moment
// of the rewrite. Where ctime comes from the kernel's coarse clock (Linux
// before 6.13), a second such rewrite within the same tick, after the
// file was hashed or its stat fingerprinted, keeps size, mtime, ctime and
// inode: the digest memory and the phase-key memory must not trust what
// they recorded of it until its ctime, too, lies clearly before the
// moment they hashed or stat'ed it (the phase-key memory then lists it as
// racy, to be hashed again).
func TestRacyRuleCtime(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC).UnixNano()
	hourAgo := now - int64(time.Hour)
	cases := []struct {
		name         string
		mtime, ctime int64
		want         bool // trusted / calm
	}{
		{"mtime and ctime long before", hourAgo, hourAgo, true},
		{"mtime put back, ctime a second before", hourAgo, now - int64(time.Second), true},
		{"mtime put back, ctime just before", hourAgo, now - int64(time.Millisecond), false},
		{"mtime put back, ctime the same instant", hourAgo, now, false},
		{"mtime put back, ctime on a whole second just before", hourAgo, now - now%1e9, false},
		{"mtime just before", now - int64(time.Millisecond), now - int64(time.Millisecond), false},
	}
	type result struct{ Trusted, Calm bool }
	got, want := map[string]result{}, map[string]result{}
	for _, c := range cases {
		st := workspace.FileStat{Size: 4, MTime: c.mtime, CTime: c.ctime, Ino: 7, Mode: 0o644}
		m := memories.LoadMemory(filepath.Join(t.TempDir(), "digests")) // none: empty
		m.Record("f", st, cache.HashBytes([]byte("aaaa")), time.Unix(0, now))
		_, trusted := m.Lookup("f", st)
		k := keying{began: now, fpOK: true, g: &gathered{Files: []inputs.File{{Rel: "f", St: st}}},
			comps: []cache.Component{{Kind: kindInput, Name: "f", Value: fileValue(cache.HashBytes([]byte("aaaa")), st.Mode)}}}
		seen := k.racyInputs()
		if seen == nil {
			t.Fatalf("%s: racy inputs unknown", c.name)
		}
		got[c.name] = result{trusted, len(seen.racy) == 0}
		want[c.name] = result{c.want, c.want}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("racy rule with the mtime put back (-want +got):\n%s", diff)
	}
}
