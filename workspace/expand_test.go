package workspace

import (
	"strings"
	"testing"
)

func TestIsAtOrBelow(t *testing.T) {
	for _, tc := range []struct {
		rel, dir string
		want     bool
	}{
		{"out/a", "out/a", true},
		{"out/a/b", "out/a", true},
		{"out/ab", "out/a", false},
		{"out", "out/a", false},
		{"x", "", false},
		{"/x", "", true},
		{"", "", true},
	} {
		if got := IsAtOrBelow(tc.rel, tc.dir); got != tc.want {
			t.Errorf("IsAtOrBelow(%q, %q) = %v, want %v", tc.rel, tc.dir, got, tc.want)
		}
	}
}

// TestHasMeta: HasMeta finds exactly the glob characters
// strings.ContainsAny finds.
func TestHasMeta(t *testing.T) {
	for _, p := range []string{"", "a", "in/f00001", "a*", "*", "?x", "d/[ab]", "{a,b}", "a\\b", "ä/ö*", "x]y", "x}y"} {
		if got, want := HasMeta(p), strings.ContainsAny(p, "*?[{"); got != want {
			t.Errorf("HasMeta(%q) = %v, want %v", p, got, want)
		}
	}
}
