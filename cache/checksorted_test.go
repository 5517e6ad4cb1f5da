package cache

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCheckSortedOutputsAgreesWithMaps: the check of a sorted tree by
// binary search gives the answer, error word for word, of the check by
// maps, and leaves to it every tree it cannot judge.
func TestCheckSortedOutputsAgreesWithMaps(t *testing.T) {
	d := HashBytes([]byte("x"))
	file := func(p string) OutputFile { return OutputFile{Path: p, Type: TypeFile, Mode: 0o644, Digest: d, Size: 1} }
	dir := func(p string) OutputFile { return OutputFile{Path: p, Type: TypeDir, Mode: 0o755} }
	link := func(p, target string) OutputFile {
		return OutputFile{Path: p, Type: TypeSymlink, Mode: 0o777, Target: target}
	}
	cases := []struct {
		name   string
		tree   []OutputFile
		sorted bool // the binary search judges it
	}{
		{"fine", []OutputFile{dir("out"), dir("out/d"), file("out/d/a"), file("out/d/b"), file("out/e")}, true},
		{"beneath-file", []OutputFile{file("a"), file("a/x")}, true},
		{"beneath-file-deep", []OutputFile{file("a"), file("a/b/c"), file("b")}, true},
		{"beneath-file-nearest", []OutputFile{dir("a"), file("a/b"), file("a/b/c")}, true},
		{"beneath-symlink", []OutputFile{link("l", "sub"), file("l/x"), dir("sub")}, true},
		{"beneath-file-after-sibling", []OutputFile{file("a"), file("a.txt"), file("a/x")}, true},
		{"bad-entry", []OutputFile{file("a"), {Path: "b", Type: TypeFile, Mode: 0o644}}, true},
		{"link-outside", []OutputFile{dir("a"), link("a/up", ".."), link("a/x", "up/../..")}, true},
		{"duplicate", []OutputFile{file("x"), file("x")}, false},
		{"unsorted", []OutputFile{file("b"), file("a")}, false},
		{"capital", []OutputFile{file("A"), file("a")}, false},
		{"non-ascii", []OutputFile{file("caf\u00e9"), file("cafe\u0301")}, false},
	}
	msg := func(err error) string { return fmt.Sprint(err) }
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := checkSortedOutputs(tc.tree)
			if ok != tc.sorted {
				t.Fatalf("checkSortedOutputs judged it: %v, want %v", ok, tc.sorted)
			}
			if ok {
				if diff := cmp.Diff(msg(checkAnyOutputs(tc.tree)), msg(err)); diff != "" {
					t.Errorf("error (-maps +sorted):\n%s", diff)
				}
			} else if err != nil {
				t.Errorf("checkSortedOutputs passed the tree on but said %v", err)
			}
			if diff := cmp.Diff(msg(checkAnyOutputs(tc.tree)), msg(checkOutputs(tc.tree))); diff != "" {
				t.Errorf("checkOutputs (-maps +it):\n%s", diff)
			}
		})
	}
}

// BenchmarkCheckOutputs: a stored tree of many files in one directory, as
// a no-op checks it each time it decodes the entry from the memo.
func BenchmarkCheckOutputs(b *testing.B) {
	d := HashBytes([]byte("x"))
	for _, n := range []int{1000, 100000} {
		tree := []OutputFile{{Path: "out", Type: TypeDir, Mode: 0o755}, {Path: "out/d", Type: TypeDir, Mode: 0o755}}
		for i := range n {
			tree = append(tree, OutputFile{Path: fmt.Sprintf("out/d/f%06d", i), Type: TypeFile, Mode: 0o644, Digest: d, Size: 1})
		}
		for _, check := range []struct {
			name string
			fn   func([]OutputFile) error
		}{{"sorted", checkOutputs}, {"maps", checkAnyOutputs}} {
			b.Run(fmt.Sprintf("%s/%d", check.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := check.fn(tree); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/file")
			})
		}
	}
}
