package upkeep

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
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

// TestLookupGroupFallsBackToGetent: a group this binary's own lookup does
// not know (one of LDAP or SSSD, for a binary without cgo) is found by
// getent(1), by name and by id; here a getent of the test's own answers
// that only for its made-up group.
func TestLookupGroupFallsBackToGetent(t *testing.T) {
	const name, gid = "cairn-test-ldap-group", 3987654
	if _, err := user.LookupGroup(name); err == nil {
		t.Skipf("group %s exists here", name)
	}
	if _, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		t.Skipf("group id %d exists here", gid)
	}
	bin := t.TempDir()
	script := "#!/bin/sh\n" +
		"[ \"$1\" = group ] || exit 2\n" +
		"case \"$2\" in " + name + "|" + strconv.Itoa(gid) + ") echo '" + name + ":*:" + strconv.Itoa(gid) + ":ann,bob' ;; *) exit 2 ;; esac\n"
	if err := os.WriteFile(filepath.Join(bin, "getent"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if got, err := lookupGroup(name); err != nil || got != gid {
		t.Errorf("lookupGroup(%q) = %d, %v; want %d", name, got, err, gid)
	}
	if got := groupName(gid); got != name {
		t.Errorf("groupName(%d) = %q, want %q", gid, got, name)
	}
	if _, err := lookupGroup("cairn-test-no-group"); err == nil {
		t.Errorf("a group neither lookup knows resolved")
	}
}
