package engine

import (
	"encoding/json"
	"io/fs"
	"testing"

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
		if got := isAtOrBelow(tc.rel, tc.dir); got != tc.want {
			t.Errorf("isAtOrBelow(%q, %q) = %v, want %v", tc.rel, tc.dir, got, tc.want)
		}
	}
}
