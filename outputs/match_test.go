package outputs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/memories"
	"github.com/cairn-run/cairn/spec"
)

// matchFixture writes a directory output (files, a subdirectory, an empty
// directory, a symlink, and enough files to be checked in three chunks)
// and three file outputs, and returns the keeper, the outputs and their
// cached parts as a run would have stored them.
func matchFixture(t *testing.T) (*Keeper, []string, Parts) {
	t.Helper()
	k := newKeeper(t)
	write(t, k, "out/d/a.txt", "a\n")
	write(t, k, "out/d/sub/b.txt", "bee\n")
	for i := range 2*matchChunk + 1 {
		write(t, k, fmt.Sprintf("out/d/many/f%04d", i), fmt.Sprint(i))
	}
	if err := os.MkdirAll(k.WS.Abs("out/d/sub/empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", k.WS.Abs("out/d/link")); err != nil {
		t.Fatal(err)
	}
	write(t, k, "f1", "one\n")
	write(t, k, "f2", "two\n")
	write(t, k, "x/f3", "three\n")
	outs := []string{"f1", "f2", "out/d", "x/f3"}
	p := &spec.Phase{Addr: "a"}
	for i, o := range outs {
		p.Outputs = append(p.Outputs, spec.Output{Name: fmt.Sprint(i), Path: o})
	}
	c, err := k.Collect(p, false, func() {})
	if err != nil {
		t.Fatal(err)
	}
	parts, problem := SplitTree(c.Tree, outs)
	if problem != "" {
		t.Fatal(problem)
	}
	return k, outs, parts
}

// TestUnmatched: every change a user can make to an output, in a
// directory output or among many declared ones, makes that output (and
// only it) unmatched, so that the run restores it; rewriting a file with
// the same bytes does not.
func TestUnmatched(t *testing.T) {
	later := time.Now().Add(time.Hour)
	cases := []struct {
		name   string
		change func(t *testing.T, k *Keeper)
		want   []string // the unmatched outputs
	}{
		{"nothing", func(*testing.T, *Keeper) {}, nil},
		{"same bytes rewritten", func(t *testing.T, k *Keeper) {
			write(t, k, "out/d/many/f1000", "1000")
			os.Chtimes(k.WS.Abs("out/d/many/f1000"), later, later)
		}, nil},
		{"file output missing", func(t *testing.T, k *Keeper) { os.Remove(k.WS.Abs("f2")) }, []string{"f2"}},
		{"file output in a directory missing", func(t *testing.T, k *Keeper) { os.RemoveAll(k.WS.Abs("x")) }, []string{"x/f3"}},
		{"file output changed, same size", func(t *testing.T, k *Keeper) { write(t, k, "f1", "ONE\n") }, []string{"f1"}},
		{"file output made executable", func(t *testing.T, k *Keeper) { os.Chmod(k.WS.Abs("f1"), 0o755) }, []string{"f1"}},
		{"file output now a directory", func(t *testing.T, k *Keeper) {
			os.Remove(k.WS.Abs("f2"))
			os.Mkdir(k.WS.Abs("f2"), 0o755)
		}, []string{"f2"}},
		{"deep file changed, same size", func(t *testing.T, k *Keeper) { write(t, k, "out/d/sub/b.txt", "BEE\n") }, []string{"out/d"}},
		{"one of many changed", func(t *testing.T, k *Keeper) { write(t, k, "out/d/many/f1024", "X024") }, []string{"out/d"}},
		{"one of many deleted", func(t *testing.T, k *Keeper) { os.Remove(k.WS.Abs("out/d/many/f0700")) }, []string{"out/d"}},
		{"file added", func(t *testing.T, k *Keeper) { write(t, k, "out/d/sub/extra", "") }, []string{"out/d"}},
		{"empty directory added", func(t *testing.T, k *Keeper) { os.Mkdir(k.WS.Abs("out/d/new"), 0o755) }, []string{"out/d"}},
		{"empty directory removed", func(t *testing.T, k *Keeper) { os.Remove(k.WS.Abs("out/d/sub/empty")) }, []string{"out/d"}},
		{"empty directory now a file", func(t *testing.T, k *Keeper) {
			os.Remove(k.WS.Abs("out/d/sub/empty"))
			write(t, k, "out/d/sub/empty", "")
		}, []string{"out/d"}},
		{"symlink retargeted", func(t *testing.T, k *Keeper) {
			os.Remove(k.WS.Abs("out/d/link"))
			os.Symlink("sub/b.txt", k.WS.Abs("out/d/link"))
		}, []string{"out/d"}},
		{"directory output gone", func(t *testing.T, k *Keeper) { os.RemoveAll(k.WS.Abs("out")) }, []string{"out/d"}},
		{"directory output now a symlink", func(t *testing.T, k *Keeper) {
			os.Rename(k.WS.Abs("out/d"), k.WS.Abs("out/e"))
			os.Symlink("e", k.WS.Abs("out/d"))
		}, []string{"out/d"}},
		{"two changed", func(t *testing.T, k *Keeper) {
			os.Remove(k.WS.Abs("f1"))
			write(t, k, "out/d/a.txt", "b\n")
		}, []string{"f1", "out/d"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, outs, parts := matchFixture(t)
			tc.change(t, k)
			var got []string
			for i, u := range k.Unmatched(outs, parts) {
				if u {
					got = append(got, outs[i])
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unmatched (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkUnmatched: a no-op's check of 10,000 output files, as one
// directory output and as 10,000 declared ones, the memory knowing them.
func BenchmarkUnmatched(b *testing.B) {
	const n = 10000
	for _, list := range []bool{false, true} {
		k := newKeeper(b)
		memPath := filepath.Join(b.TempDir(), "digests")
		k.Mem = memories.LoadMemory(memPath)
		// Hashed, says the memory, long after the files were written: a
		// tree that old is not racy, and its digests are trusted.
		k.Now = func() time.Time { return time.Now().Add(time.Hour) }
		p := &spec.Phase{Addr: "a"}
		var outs []string
		for i := range n {
			rel := fmt.Sprintf("out/d/f%06d", i)
			abs := k.WS.Abs(rel)
			os.MkdirAll(abs[:len(abs)-8], 0o755)
			if err := os.WriteFile(abs, []byte(rel), 0o644); err != nil {
				b.Fatal(err)
			}
			if list {
				outs = append(outs, rel)
			}
		}
		if !list {
			outs = []string{"out/d"}
		}
		for i, o := range outs {
			p.Outputs = append(p.Outputs, spec.Output{Name: fmt.Sprint(i), Path: o})
		}
		c, err := k.Collect(p, false, func() {})
		if err != nil {
			b.Fatal(err)
		}
		parts, _ := SplitTree(c.Tree, outs)
		// Read back, as the next run finds the memory.
		if err := k.Mem.Save(); err != nil {
			b.Fatal(err)
		}
		k.Mem = memories.LoadMemory(memPath)
		name := map[bool]string{false: "dir", true: "list"}[list]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i, u := range k.Unmatched(outs, parts) {
					if u {
						b.Fatalf("%s unmatched", outs[i])
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/file")
		})
	}
}
