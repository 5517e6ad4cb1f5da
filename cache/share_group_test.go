package cache

import (
	"os/exec"
	"strconv"
	"testing"
)

func TestParseGroupLine(t *testing.T) {
	tests := []struct {
		line string
		name string
		gid  int
		ok   bool
	}{
		{"research:x:1234:ann,bob", "research", 1234, true},
		{"research:x:1234:", "research", 1234, true},
		{"research:*:0", "research", 0, true},
		{"research:x:1234:ann\nother:x:5:", "research", 1234, true},
		{"research:x:-1:", "", 0, false},
		{"research:x:abc:", "", 0, false},
		{":x:12:", "", 0, false},
		{"research", "", 0, false},
		{"", "", 0, false},
	}
	for _, tt := range tests {
		name, gid, ok := parseGroupLine(tt.line)
		if name != tt.name || gid != tt.gid || ok != tt.ok {
			t.Errorf("parseGroupLine(%q) = %q, %d, %v; want %q, %d, %v", tt.line, name, gid, ok, tt.name, tt.gid, tt.ok)
		}
	}
}

// TestLookupGroupMatchesGetent: a group the system knows resolves to the
// same id and name as getent(1) gives, by name and by id, whether or not
// this binary has cgo.
func TestLookupGroupMatchesGetent(t *testing.T) {
	out, err := exec.Command("getent", "group", "0").Output()
	if err != nil {
		t.Skipf("no getent here: %v", err)
	}
	name, gid, ok := parseGroupLine(string(out))
	if !ok {
		t.Fatalf("getent group 0 printed %q", out)
	}
	got, err := lookupGroup(name)
	if err != nil || got != gid {
		t.Errorf("lookupGroup(%q) = %d, %v; want %d", name, got, err, gid)
	}
	if n := groupName(gid); n != name {
		t.Errorf("groupName(%d) = %q, want %q", gid, n, name)
	}
	if _, err := lookupGroup("no-such-group-cairn-" + strconv.Itoa(gid)); err == nil {
		t.Errorf("an unknown group resolved")
	}
}
