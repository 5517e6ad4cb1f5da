package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The shapes differ in form only: prog and script must write the same
// bytes (sha256sum of every source, in order), so a tool's time in one
// shape compares with its time in the other.
func TestScriptWritesWhatProgWrites(t *testing.T) {
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("sha256sum is not installed")
	}
	for _, srcs := range [][]string{{"a"}, {"a", "b"}, {"a", "b", "c d", "e"}} {
		t.Run(strings.Join(srcs, ","), func(t *testing.T) {
			dir := t.TempDir()
			for i, s := range srcs {
				if err := os.WriteFile(filepath.Join(dir, s), []byte(strings.Repeat(s, i+1)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, scriptName), []byte(phaseScript), 0o644); err != nil {
				t.Fatal(err)
			}
			script := exec.Command("sh", append(append([]string{scriptName}, srcs...), "out")...)
			script.Dir = dir
			if out, err := script.CombinedOutput(); err != nil {
				t.Fatalf("sh %s: %v\n%s", scriptName, err, out)
			}
			got, err := os.ReadFile(filepath.Join(dir, "out"))
			if err != nil {
				t.Fatal(err)
			}
			prog := exec.Command("sha256sum", srcs...)
			prog.Dir = dir
			want, err := prog.Output()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("script's output differs from sha256sum's (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecipe(t *testing.T) {
	tests := []struct {
		shape string
		copy  bool
		n     int
		want  string
	}{
		{shape: "cat", n: 2, want: "cat in/a out/b | sha256sum > out/c"},
		{shape: "prog", n: 2, want: "sha256sum in/a out/b > out/c"},
		{shape: "script", n: 2, want: "sh in/a out/b out/c"},
		{shape: "prog", copy: true, n: 1, want: "cp in/a out/b out/c"},
		{shape: "script", copy: true, n: 2, want: "cat in/a out/b > out/c"},
	}
	defer func(s string, c bool) { shape, copyMode = s, c }(shape, copyMode)
	for _, tt := range tests {
		shape, copyMode = tt.shape, tt.copy
		if diff := cmp.Diff(tt.want, recipe("in/a out/b", tt.n, "out/c")); diff != "" {
			t.Errorf("shape %s copy %v (-want +got):\n%s", tt.shape, tt.copy, diff)
		}
	}
}

// In shape script the script is a declared source of every phase, for
// every tool: an edit of it must rerun them all.
func TestScriptIsASource(t *testing.T) {
	defer func(s string) { shape = s }(shape)
	shape = "script"
	w := workload{n: 4, f: 8}
	if err := w.check(); err != nil {
		t.Fatal(err)
	}
	ps := w.phases()
	declared := map[string]string{ // how each tool's files declare the script a source
		"cairn":     `inputs  = ["phase.sh"`,
		"make":      `: phase.sh in/`,
		"ninja":     `: h phase.sh in/`,
		"task":      `sources: [phase.sh, in/`,
		"snakemake": `input: ["phase.sh", "in/`,
		"turbo":     `"$TURBO_ROOT$/phase.sh"`,
	}
	for tool, decl := range declared {
		dir := t.TempDir()
		if err := generators[tool](ps, dir); err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			text.Write(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(text.String(), decl); got != len(ps) {
			t.Errorf("%s: %q found %d times, want once per phase (%d)", tool, decl, got, len(ps))
		}
	}
}
