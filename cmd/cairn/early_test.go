package main

import (
	"os"
	"testing"

	"github.com/cairn-run/cairn/spec"
)

// TestEarlyMemories: the memories are read ahead only for the commands
// that use them (run, plan) on the spec of the current directory, and are
// the memories of that directory.
func TestEarlyMemories(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"run"}, true},
		{[]string{"plan", "-j", "2", "p1"}, true},
		{[]string{"run", "-f", "other/experiment.hcl"}, false},
		{[]string{"run", "--file=other.hcl"}, false},
		{[]string{"plan", "-file", "x.hcl"}, false},
		{[]string{"status"}, false},
		{[]string{"version"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		e := earlyMemories(tt.args)
		if (e != nil) != tt.want {
			t.Errorf("earlyMemories(%q) read ahead: %v, want %v", tt.args, e != nil, tt.want)
			continue
		}
		if e == nil {
			continue
		}
		if e.dir != wd {
			t.Errorf("earlyMemories(%q) read %s, want the current directory %s", tt.args, e.dir, wd)
		}
		if m := <-e.mem; m == nil {
			t.Errorf("earlyMemories(%q) gave no memories", tt.args)
		}
	}
}

// TestEarlySpec: without -var and -var-file, run reads the spec ahead
// from its memo, the spec loadSpec gives; a variable on the command line,
// or no memo, leaves the spec to loadSpec.
func TestEarlySpec(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	const src = "phase \"a\" {\n  command = \"echo a > a.txt\"\n  outputs = [\"a.txt\"]\n}\n"
	if err := os.WriteFile("experiment.hcl", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(".cairn", 0o755); err != nil {
		t.Fatal(err)
	}
	if e := earlyMemories([]string{"run"}); e == nil || e.spec == nil || <-e.spec != nil {
		t.Fatal("a spec read ahead without a memo")
	}
	g := &globals{File: "experiment.hcl", stderr: os.Stderr}
	want, err := g.loadSpec() // writes the memo
	if err != nil {
		t.Fatal(err)
	}
	e := earlyMemories([]string{"run"})
	if e == nil || e.spec == nil {
		t.Fatal("run did not read the spec ahead")
	}
	got := <-e.spec
	if got == nil || got.Hash != want.Hash || len(got.Phases) != 1 || got.Phases[0].Addr != "a" {
		t.Fatalf("spec read ahead = %+v, want %+v", got, want)
	}
	for _, args := range [][]string{{"run", "-var", "x=1"}, {"run", "--var-file=v.hcl"}, {"plan", "-var=x=1"}} {
		if e := earlyMemories(args); e == nil || e.spec != nil {
			t.Errorf("earlyMemories(%q): spec read ahead despite a variable", args)
		}
	}
	// loadSpec takes the spec read ahead, unless variables are set.
	ahead := &spec.Spec{Hash: "read ahead"}
	g.early = &earlyRead{spec: make(chan *spec.Spec, 1)}
	g.early.spec <- ahead
	if s, err := g.loadSpec(); err != nil || s != ahead {
		t.Fatalf("loadSpec = %v, %v; want the spec read ahead", s, err)
	}
	g.early = &earlyRead{spec: make(chan *spec.Spec, 1)}
	g.early.spec <- ahead
	g.Vars = []string{"x=1"}
	if s, err := g.loadSpec(); err == nil && s == ahead {
		t.Fatal("loadSpec took the spec read ahead although -var is set")
	}
}

// TestEarlyTakenBeforeRead: what was read ahead may be taken (and its
// field cleared) before the read ends; the read still delivers it. (The
// reads once sent on the fields: a field cleared first left the read
// blocked on a nil channel and cairn waiting for it forever.)
func TestEarlyTakenBeforeRead(t *testing.T) {
	for range 50 {
		e := earlyMemories([]string{"run"})
		mem, sp := e.mem, e.spec
		e.mem, e.spec = nil, nil // as openEngine and loadSpec do, at once
		<-mem
		<-sp
	}
}
