package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseKeyIndex: the fast reader of keys.json takes exactly the
// layout keyIndex.save writes, agrees with encoding/json on it, and
// leaves every other file to encoding/json.
func TestParseKeyIndex(t *testing.T) {
	saved := func(m map[string]string) []byte {
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	good := map[string]string{"prep": "aa", `train["m1"]`: "bb", "eval/x": "cc", "é": "dd"}
	tests := []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"as saved, plain names", saved(map[string]string{"a": "1", "b": "2", "é": "3"}), true},
		{"as saved, names with quotes (escaped)", saved(good), false},
		{"empty map", saved(map[string]string{}), false},
		{"trailing comma", []byte("{\n  \"a\": \"1\",\n}\n"), false},
		{"missing comma", []byte("{\n  \"a\": \"1\"\n  \"b\": \"2\"\n}\n"), false},
		{"unsorted", []byte("{\n  \"b\": \"1\",\n  \"a\": \"2\"\n}\n"), false},
		{"duplicate", []byte("{\n  \"a\": \"1\",\n  \"a\": \"2\"\n}\n"), false},
		{"no final newline", []byte("{\n  \"a\": \"1\"\n}"), false},
		{"html character", []byte("{\n  \"a<b\": \"1\"\n}\n"), false},
		{"invalid utf-8", []byte("{\n  \"a\xff\": \"1\"\n}\n"), false},
		{"compact", []byte(`{"a":"1"}`), false},
	}
	for _, tt := range tests {
		got, ok := parseKeyIndex(tt.in)
		if ok != tt.ok {
			t.Errorf("%s: ok = %v, want %v", tt.name, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		var want map[string]string
		if err := json.Unmarshal(tt.in, &want); err != nil {
			t.Fatalf("%s: encoding/json: %v", tt.name, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-encoding/json +fast):\n%s", tt.name, diff)
		}
	}
	// Whatever the path, loadKeyIndex reads what save wrote.
	p := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(p, saved(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(good, loadKeyIndex(p).keys); diff != "" {
		t.Errorf("loadKeyIndex (-saved +loaded):\n%s", diff)
	}
}
