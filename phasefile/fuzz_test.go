package phasefile

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzMetricsFile: ReadMetrics accepts exactly one JSON object, and
// returns it compacted (reading its output again gives it back).
func FuzzMetricsFile(f *testing.F) {
	f.Add([]byte(`{"accuracy": 0.9, "loss": [1, 2]}`))
	f.Add([]byte(`[1]`))
	f.Add([]byte(`{"a":1} {"b":2}`))
	f.Add([]byte("\xef\xbb\xbf{}"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "m.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadMetrics(p)
		if err != nil {
			return
		}
		if len(got) == 0 || got[0] != '{' || !json.Valid(got) {
			t.Fatalf("accepted %q as %q, not a JSON object", b, got)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		again, err := ReadMetrics(p)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("compacted metrics %q read back as %q, %v", got, again, err)
		}
	})
}

// FuzzMaskWriter: whatever the secrets and however the output is cut into
// writes, no secret reaches the log, and output holding no secret passes
// unchanged.
func FuzzMaskWriter(f *testing.F) {
	f.Add([]byte("token=abc123 and abc123abc123"), "abc123", "c1", uint8(3))
	f.Add([]byte("aaaaaaa"), "aa", "aaa", uint8(1))
	f.Add([]byte("no secret here\n"), "zzzz", "", uint8(5))
	f.Fuzz(func(t *testing.T, out []byte, s1, s2 string, step uint8) {
		secrets := []string{s1, s2}
		var log bytes.Buffer
		m := NewMaskWriter(&log, secrets)
		n := int(step)%17 + 1
		for rest := out; len(rest) > 0; {
			k := min(n, len(rest))
			if _, err := m.Write(rest[:k]); err != nil {
				t.Fatal(err)
			}
			rest = rest[k:]
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if s == "" || strings.Contains(s, "*") {
				// The mask is made of "*": a secret holding one can be
				// spelt by a mask and the bytes around it.
				continue
			}
			if bytes.Contains(log.Bytes(), []byte(s)) {
				t.Fatalf("secret %q reached the log %q (output %q, writes of %d)", s, log.Bytes(), out, n)
			}
		}
		clean := true
		for _, s := range secrets {
			if s != "" && bytes.Contains(out, []byte(s)) {
				clean = false
			}
		}
		if clean && !bytes.Equal(log.Bytes(), out) {
			t.Fatalf("output without secrets changed: %q -> %q", out, log.Bytes())
		}
	})
}
