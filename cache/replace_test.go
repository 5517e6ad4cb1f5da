package cache

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// resultEntry returns the entry for key "p" whose one output holds
// content, stored in c's cas/.
func resultEntry(t testing.TB, c *Dir, content string) *Entry {
	t.Helper()
	d, err := c.PutBytes([]byte(content))
	if err != nil {
		t.Fatal(err)
	}
	e := testEntry("p", d)
	e.Outputs[0].Size = int64(len(content))
	e.Created = time.Now().UTC()
	return e
}

func outputDigest(t testing.TB, c *Dir, key ActionID) Digest {
	t.Helper()
	e, err := c.GetEntry(key)
	if err != nil {
		t.Fatal(err)
	}
	return e.Outputs[0].Digest
}

// A replaced entry is what every reader gets afterwards: GetEntry, a
// workspace memo that had remembered the old one, another Dir on the same
// cache; and a plain put after it keeps it.
func TestReplaceEntrySupersedes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		old, force string // "" old: nothing stored before
		want       string
	}{
		{"nothing stored", "", "forced", "forced"},
		{"different result", "first", "forced", "forced"},
		{"same result", "same", "same", "same"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root, memoPath := filepath.Join(t.TempDir(), "cache"), filepath.Join(t.TempDir(), "entries")
			c, m := memoDir(t, root, memoPath, Options{})
			var old *Entry
			if tc.old != "" {
				old = resultEntry(t, c, tc.old)
				if err := c.PutEntry(old); err != nil {
					t.Fatal(err)
				}
				// Remember the old entry, not racy, so only its file's
				// stamp can keep the memo from answering with it.
				m.now = func() time.Time { return time.Now().Add(time.Second) }
				if _, err := c.GetEntryLean(old.Key); err != nil {
					t.Fatal(err)
				}
			}
			other, err := Open(root)
			if err != nil {
				t.Fatal(err)
			}
			forced := resultEntry(t, c, tc.force)
			forced.Created = forced.Created.Add(time.Minute)
			if err := c.ReplaceEntry(forced); err != nil {
				t.Fatal(err)
			}
			want := HashBytes([]byte(tc.want))
			lean, err := c.GetEntryLean(forced.Key)
			if err != nil {
				t.Fatal(err)
			}
			if lean.Outputs[0].Digest != want {
				t.Errorf("GetEntryLean (memo) gives output %s, want %s", lean.Outputs[0].Digest.Short(), want.Short())
			}
			if got := outputDigest(t, other, forced.Key); got != want {
				t.Errorf("another Dir reads output %s, want %s", got.Short(), want.Short())
			}
			whole, err := c.GetEntry(forced.Key)
			if err != nil {
				t.Fatal(err)
			}
			wantCreated := forced.Created
			if tc.want == tc.old {
				wantCreated = old.Created // the old entry stayed
			}
			if !whole.Created.Equal(wantCreated) {
				t.Errorf("entry created %v, want %v", whole.Created, wantCreated)
			}
			// A plain put (a run that was not forced) does not undo it.
			if err := other.PutEntry(resultEntry(t, other, "late plain run")); err != nil {
				t.Fatal(err)
			}
			if got := outputDigest(t, c, forced.Key); got != want {
				t.Errorf("after a plain put: output %s, want %s", got.Short(), want.Short())
			}
			rep, err := c.Verify(VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]Problem(nil), rep.Problems); diff != "" {
				t.Errorf("verify problems (-want +got):\n%s", diff)
			}
			if rep.Entries != 1 {
				t.Errorf("verify found %d entries, want 1", rep.Entries)
			}
		})
	}
}

// Forced puts racing on one key from several processes leave one entry,
// one of theirs, that every reader agrees on, and a clean cache.
func TestReplaceEntryConcurrent(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "cache")
	const writers, rounds = 4, 20
	dirs := make([]*Dir, writers)
	for i := range dirs {
		c, err := Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		dirs[i] = c
	}
	if err := dirs[0].PutEntry(resultEntry(t, dirs[0], "first")); err != nil {
		t.Fatal(err)
	}
	for r := range rounds {
		entries := make([]*Entry, writers)
		ours := map[Digest]bool{}
		for i, c := range dirs {
			entries[i] = resultEntry(t, c, fmt.Sprintf("round %d writer %d", r, i))
			ours[entries[i].Outputs[0].Digest] = true
		}
		start := make(chan struct{})
		errs := make(chan error, writers)
		var wg sync.WaitGroup
		for i, c := range dirs {
			wg.Go(func() {
				<-start
				errs <- c.ReplaceEntry(entries[i])
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
		}
		agreed := outputDigest(t, dirs[0], entries[0].Key)
		if !ours[agreed] {
			t.Fatalf("round %d: the entry holds %s, none of this round's results", r, agreed.Short())
		}
		for i, c := range dirs[1:] {
			if got := outputDigest(t, c, entries[0].Key); got != agreed {
				t.Fatalf("round %d: reader %d gets %s, reader 0 %s", r, i+1, got.Short(), agreed.Short())
			}
		}
	}
	rep, err := dirs[0].Verify(VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Problem(nil), rep.Problems); diff != "" {
		t.Errorf("verify problems (-want +got):\n%s", diff)
	}
}
