package engine

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
)

// TestCommandValueIsJSON: the command component is exactly encoding/json's
// array, on the direct path and on the fallback.
func TestCommandValueIsJSON(t *testing.T) {
	for _, argv := range [][]string{
		nil,
		{},
		{""},
		{"sh", "-c", "cat in/a in/b | sha256sum > out/x"},
		{"python", "train.py", "--lr=0.01", "a b", "~!@#$%^*()_+=-`{}|[]:;',./?"},
		{"sh", "-c", `cat in/a | sha256sum > out/x && echo "<done>" 2>&1 \ x`},
		{`say "hi"`, `back\slash`, "tab\there", "nl\n", "<html>", "a&b", "del\x7f", "é", "\u2028", "bad\xff"},
	} {
		want, err := json.Marshal(argv)
		if err != nil {
			t.Fatal(err)
		}
		if got := commandValue(argv); got != string(want) {
			t.Errorf("commandValue(%q) = %s, json.Marshal gives %s", argv, got, want)
		}
	}
}

func FuzzCommandValue(f *testing.F) {
	f.Add("sh", "-c", "echo <x> & \"y\"")
	f.Add("", "\x00", "\xff")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		argv := []string{a, b, c}
		want, _ := json.Marshal(argv)
		if got := commandValue(argv); got != string(want) {
			t.Fatalf("commandValue(%q) = %s, json.Marshal gives %s", argv, got, want)
		}
	})
}

// TestFileValue: the input and upstream component values keep their
// format: "-:" or "x:" (any execute bit), then the hex digest.
func TestFileValue(t *testing.T) {
	d := cache.HashBytes([]byte("x"))
	for _, tc := range []struct {
		mode fs.FileMode
		want string
	}{
		{0o644, "-:" + d.String()},
		{0o600, "-:" + d.String()},
		{0o755, "x:" + d.String()},
		{0o610, "x:" + d.String()},
		{0o601, "x:" + d.String()},
	} {
		if got := fileValue(d, tc.mode); got != tc.want {
			t.Errorf("fileValue(%v) = %s, want %s", tc.mode, got, tc.want)
		}
	}
}

// TestComponentsInputKinds: every kind of input pattern gives the input
// components it names: a directory (walked, symlinks to files followed,
// to directories not), a glob, a plain
// file named twice, a glob matching nothing.
func TestComponentsInputKinds(t *testing.T) {
	s := newSetup(t, map[string]string{
		"experiment.hcl": `
phase "p" {
  command = "true"
  inputs  = ["data", "*.cfg", "z.txt", "z.txt", "nothing*"]
  outputs = ["o.txt"]
}
`,
		"data/a.txt":     "a",
		"data/sub/b.txt": "b",
		"data/c.txt":     "c",
		"x.cfg":          "x",
		"y.cfg":          "y",
		"z.txt":          "z",
	})
	if err := os.Symlink("a.txt", filepath.Join(s.dir, "data/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(s.dir, "data/dirlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(s.dir, "y.cfg"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := s.engine(t)
	comps, err := e.components(e.spec.Phase("p"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range comps {
		if c.Kind == kindInput {
			got = append(got, c.Name+" "+c.Value)
		}
	}
	v := func(content string) string { return "-:" + cache.HashBytes([]byte(content)).String() }
	want := []string{
		"data/a.txt " + v("a"),
		"data/c.txt " + v("c"),
		"data/link " + v("a"),
		"data/sub/b.txt " + v("b"),
		"x.cfg " + v("x"),
		"y.cfg x:" + cache.HashBytes([]byte("y")).String(),
		"z.txt " + v("z"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("input components (-want +got):\n%s", diff)
	}
}
