package main

import (
	"os"
	"testing"
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
