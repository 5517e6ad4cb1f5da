package phasefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadMetricsFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		path    string
		want    string
		wantErr string
	}{
		"object compacted": {path: write("ok.json", "{\n  \"acc\": 0.9,\n  \"f1\": {\"macro\": 1e-3}\n}\n"), want: `{"acc":0.9,"f1":{"macro":1e-3}}`},
		"array":            {path: write("arr.json", "[1, 2]"), wantErr: "holds a JSON array, not an object"},
		"number":           {path: write("num.json", "0.9"), wantErr: "holds a JSON number"},
		"invalid":          {path: write("bad.json", `{"acc": }`), wantErr: "not valid JSON"},
		"empty":            {path: write("empty.json", ""), wantErr: "not valid JSON"},
		"too large":        {path: write("big.json", `{"x":"`+strings.Repeat("a", MaxMetricsFileSize)+`"}`), wantErr: "larger than the 1024 KiB limit"},
		"directory":        {path: filepath.Join(dir, "adir"), wantErr: "not a regular file"},
		"missing":          {path: filepath.Join(dir, "nope.json"), wantErr: "no such file"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ReadMetrics(tc.path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
