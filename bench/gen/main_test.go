package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// The outlist workload declares exactly the files its command writes,
// and outs the directory holding them: otherwise cairn would fail the
// phase (a declared output missing) or the two would not compare.
func TestDataOutputsAreWhatTheCommandWrites(t *testing.T) {
	if _, err := exec.LookPath("split"); err != nil {
		t.Skip("split is not installed")
	}
	const n, s = 12, 5
	dir := t.TempDir()
	if err := writeData("outlist", n, s, dir, true); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", splitCommand(s))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", splitCommand(s), err, out)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "out", "d"))
	if err != nil {
		t.Fatal(err)
	}
	var wrote []string
	for _, e := range ents {
		wrote = append(wrote, "out/d/"+e.Name())
		if info, err := e.Info(); err != nil || info.Size() != s {
			t.Errorf("out/d/%s: %v bytes (%v), want %d", e.Name(), info.Size(), err, s)
		}
	}
	hcl, err := os.ReadFile(filepath.Join(dir, "experiment.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	declared := regexp.MustCompile(`"(out/d/f\d+)"`).FindAllStringSubmatch(string(hcl), -1)
	var decl []string
	for _, m := range declared {
		decl = append(decl, m[1])
	}
	if diff := cmp.Diff(decl, wrote); diff != "" {
		t.Errorf("declared outputs (-) differ from the files written (+):\n%s", diff)
	}
}

// The files workload puts every file where dataFile says, once.
func TestDataFilesLayout(t *testing.T) {
	dir := t.TempDir()
	const n = 2*filesPerDir + 3
	if err := writeData("files", n, 7, dir, true); err != nil {
		t.Fatal(err)
	}
	count := 0
	err := filepath.WalkDir(filepath.Join(dir, "in"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			count++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Errorf("%d files under in/, want %d", count, n)
	}
	for _, i := range []int{0, filesPerDir, n - 1} {
		if st, err := os.Stat(filepath.Join(dir, dataFile(i))); err != nil || st.Size() != 7 {
			t.Errorf("%s: %v", dataFile(i), err)
		}
	}
}
