package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDirectArgv(t *testing.T) {
	bin := t.TempDir()
	dir := t.TempDir()
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{{filepath.Join(bin, "prog"), 0o755}, {filepath.Join(bin, "plain"), 0o644}, {filepath.Join(dir, "local"), 0o755}} {
		if err := os.WriteFile(f.path, []byte("#!/bin/sh\n"), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=/nowhere", "PATH=" + bin}
	for _, tc := range []struct {
		line string
		path string // "" means: through sh
		args []string
	}{
		{"prog", filepath.Join(bin, "prog"), []string{"prog"}},
		{"  prog -n 3\tin/a.txt --out=b.txt x,y:z+1@2%  ", filepath.Join(bin, "prog"), []string{"prog", "-n", "3", "in/a.txt", "--out=b.txt", "x,y:z+1@2%"}},
		{"./local arg", filepath.Join(dir, "local"), []string{"./local", "arg"}},
		{"", "", nil},
		{"   ", "", nil},
		{"prog > out", "", nil},
		{"prog | prog", "", nil},
		{"prog; prog", "", nil},
		{"prog && prog", "", nil},
		{"prog $HOME", "", nil},
		{"prog 'a b'", "", nil},
		{`prog "a"`, "", nil},
		{`prog a\ b`, "", nil},
		{"prog *.txt", "", nil},
		{"prog ~/x", "", nil},
		{"prog a#b", "", nil},
		{"prog\nprog", "", nil},
		{"prog `x`", "", nil},
		{"prog (x)", "", nil},
		{"X=1 prog", "", nil},
		{"echo hi", "", nil},
		{"cd sub", "", nil},
		{"exit 3", "", nil},
		{"true", "", nil},
		{"missing arg", "", nil},
		{"plain", "", nil}, // not executable: sh reports it
	} {
		path, args, ok := directArgv([]string{"sh", "-c", tc.line}, env, dir)
		if ok != (tc.path != "") || path != tc.path || !cmp.Equal(args, tc.args) {
			t.Errorf("%q: got %q %q %v, want %q %q", tc.line, path, args, ok, tc.path, tc.args)
		}
	}
	if _, _, ok := directArgv([]string{"prog", "a"}, env, dir); ok {
		t.Errorf("an argv that is not sh -c was rewritten")
	}
}

// TestRunDirectFallsBackToSh: a plain command naming a script without #!
// (which the kernel will not exec) still runs, through sh as before, and
// a plain command runs with the job's environment and directory.
func TestRunDirectFallsBackToSh(t *testing.T) {
	bin := t.TempDir()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "noshebang"), []byte("echo from-script > out.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH")}
	x := &LocalExecutor{}
	defer x.Flush()
	run := func(line string) {
		t.Helper()
		var stderr strings.Builder
		code, err := x.Run(context.Background(), &Job{Phase: "p", Argv: []string{"sh", "-c", line}, Dir: dir, Env: env, Stderr: &stderr})
		if err != nil || code != 0 {
			t.Fatalf("%q: exit %d, %v\n%s", line, code, err, stderr.String())
		}
	}
	run("noshebang")
	if b, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(b) != "from-script\n" {
		t.Errorf("script without #!: out.txt = %q, %v", b, err)
	}
	run("touch made-here")
	if _, err := os.Stat(filepath.Join(dir, "made-here")); err != nil {
		t.Errorf("plain command: %v", err)
	}
}
