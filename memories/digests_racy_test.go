package memories

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/workspace"
)

// coarseLag is how far a file timestamp may lag the wall clock at the
// moment of the write: Linux stamps files from its coarse clock, up to one
// jiffy (10 ms at HZ=100) behind.
const coarseLag = 10 * time.Millisecond

// staleHitPossible reports whether a file whose stat (mtime) was recorded
// when its content was hashed at recorded could be edited afterwards and
// keep that mtime, on a filesystem of timestamp granularity g: the edit,
// made at or after recorded, gets the mtime floor((t - lag) / g) * g for
// some t >= recorded.
func staleHitPossible(mtime, recorded int64, g time.Duration) bool {
	earliest := recorded - int64(coarseLag)
	tick := earliest - earliest%int64(g)
	return mtime >= tick
}

// TestRacyRuleControlledMtimes is T32 on the rule itself: for random
// (mtime, hash time) pairs on filesystems of 1 ns, 1 s and 2 s timestamp
// granularity and with the file's clock ahead of ours (skew), an entry
// whose stat an edit after hashing could reproduce exactly (same size,
// same mtime, same ctime, same inode) must never be trusted.
func TestRacyRuleControlledMtimes(t *testing.T) {
	trials := 1000
	if longTier() {
		trials = 100000
	}
	rng := rand.New(rand.NewPCG(1, 2))
	m := &Memory{now: time.Now, entries: map[string]*dirRecs{}}
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	stale, extra, total := 0, 0, 0
	type pair struct{ mtime, recorded int64 }
	for _, g := range []time.Duration{1, time.Millisecond, time.Second, 2 * time.Second} {
		var pairs []pair
		// The hash time just after a tick boundary, every mtime on the
		// grid around it: where a rule with too little slack fails.
		for _, delta := range []time.Duration{0, 1, time.Millisecond, 5 * time.Millisecond, 9 * time.Millisecond, 20 * time.Millisecond, g - 1} {
			recorded := base + int64(8*time.Second) + int64(delta)
			for k := int64(-4); k <= 1; k++ {
				mtime := base + int64(8*time.Second) + k*int64(g)
				pairs = append(pairs, pair{mtime, recorded}, pair{mtime + int64(delta), recorded})
			}
		}
		for range trials {
			// The hash time anywhere in a 10 s window; the mtime from
			// 5 s before it to 1 s after it (a file clock running ahead).
			recorded := base + rng.Int64N(int64(10*time.Second))
			mtime := recorded - int64(5*time.Second) + rng.Int64N(int64(6*time.Second))
			pairs = append(pairs, pair{mtime, recorded})
		}
		for _, pr := range pairs {
			recorded, mtime := pr.recorded, pr.mtime
			mtime -= mtime % int64(g)
			st := workspace.FileStat{Size: 4, MTime: mtime, CTime: mtime, Ino: 7, Mode: 0o644}
			m.record("f", memEntry{digest: cache.HashBytes([]byte("aaaa")), size: 4, mtime: mtime, ctime: mtime, ino: 7, mode: 0o644, recorded: recorded})
			_, trusted := m.Lookup("f", st)
			possible := staleHitPossible(mtime, recorded, g)
			total++
			switch {
			case trusted && possible:
				stale++
				if stale <= 5 {
					t.Errorf("granularity %v: entry hashed at %s, mtime %s trusted, but an edit after hashing can keep that mtime",
						g, time.Unix(0, recorded).UTC().Format(time.RFC3339Nano), time.Unix(0, mtime).UTC().Format(time.RFC3339Nano))
				}
			case !trusted && !possible:
				extra++
			}
		}
	}
	t.Logf("FIGURE T32 trials=%d stale_hits=%d extra_rehash=%d", total, stale, extra)
}

// TestRacyRuleSurvivesSave: the hash time is saved with the entry, so a
// racy entry stays racy in the next process.
func TestRacyRuleSurvivesSave(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "digests")
	mtime := time.Now().Add(-time.Hour).UnixNano()
	st := workspace.FileStat{Size: 4, MTime: mtime, CTime: mtime, Ino: 9, Mode: 0o644}
	m := LoadMemory(p)
	m.Record("racy", st, cache.HashBytes([]byte("aaaa")), time.Unix(0, mtime+int64(time.Millisecond)))
	m.Record("calm", st, cache.HashBytes([]byte("aaaa")), time.Unix(0, mtime+int64(time.Minute)))
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	m2 := LoadMemory(p)
	if _, ok := m2.Lookup("racy", st); ok {
		t.Error("reloaded racy entry was trusted")
	}
	if _, ok := m2.Lookup("calm", st); !ok {
		t.Error("reloaded entry hashed a minute after its mtime was not trusted")
	}
	// A change of ctime alone (chmod, a rewrite with the mtime put back)
	// or of the inode (replaced by rename) is a change.
	for _, changed := range []workspace.FileStat{
		{Size: st.Size, MTime: st.MTime, CTime: st.CTime + 1, Ino: st.Ino, Mode: st.Mode},
		{Size: st.Size, MTime: st.MTime, CTime: st.CTime, Ino: st.Ino + 1, Mode: st.Mode},
		{Size: st.Size, MTime: st.MTime, CTime: st.CTime, Ino: st.Ino, Mode: 0o755},
	} {
		if _, ok := m2.Lookup("calm", changed); ok {
			t.Errorf("entry trusted for a changed stat %+v", changed)
		}
	}
}

// TestRacyEditRightAfterHash: on the real filesystem, a same-size edit made
// immediately after a file was hashed, with its mtime forced back to the
// hashed one, is seen by the next lookup.
func TestRacyEditRightAfterHash(t *testing.T) {
	trials := 1000
	if longTier() {
		trials = 10000
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	m := LoadMemory(filepath.Join(dir, "digests"))
	stale := 0
	var rehash time.Duration
	for i := range trials {
		a, b := fmt.Appendf(nil, "a%07d", i), fmt.Appendf(nil, "b%07d", i)
		if err := os.WriteFile(p, a, 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if d, _, err := m.Digest("f", p); err != nil || d != cache.HashBytes(a) {
			t.Fatalf("trial %d: first digest %v, %v", i, d, err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 { // half the trials: the very same mtime as hashed
			if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		d, _, err := m.Digest("f", p)
		rehash += time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if d != cache.HashBytes(b) {
			stale++
		}
	}
	if stale > 0 {
		t.Errorf("%d of %d same-size edits right after hashing were missed", stale, trials)
	}
	t.Logf("FIGURE T32 edit_trials=%d stale_hits=%d rehash_ms=%.1f", trials, stale, float64(rehash.Microseconds())/1000)
}
