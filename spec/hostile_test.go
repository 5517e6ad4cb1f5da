package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/spec/funcs"
)

// TestHostileSpecs: inputs that hung cairn, ate its memory, took minutes
// or crashed it are spec errors at their file:line:col, given at once.
func TestHostileSpecs(t *testing.T) {
	deep := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
	}
	manyKeys := func(n int) string {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprint(i)
		}
		return strings.Join(keys, ",")
	}
	tests := []struct {
		name    string
		src     string
		files   map[string]string
		fifo    string // a named pipe made in the workspace
		wantErr string // "" when the spec loads
	}{
		{name: "100,000 nested parentheses", src: "locals {\n  x = " + deep("(", ")", 100_000) + "\n}\n", wantErr: "spec.hcl:2:1006: Nesting too deep"},
		{name: "100,000 nested abs(", src: "locals {\n  x = " + deep("abs(", ")", 100_000) + "\n}\n", wantErr: "spec.hcl:2:4006: Nesting too deep"},
		{name: "nesting at the bound", src: "locals {\n  x = " + deep("(", ")", maxNesting-1) + "\n}\n"},
		{name: "brackets in strings and comments", src: "# " + strings.Repeat("(", 2000) + "\nlocals {\n  x = \"" + strings.Repeat("[", 2000) + "\"\n}\n"},
		{name: "deep YAML flow list", src: "locals {\n  y = yamldecode(file(\"deep.yaml\"))\n}\n", files: map[string]string{"deep.yaml": deep("[", "]", 200_000)}, wantErr: "spec.hcl:2:7: Error in function call"},
		{name: "YAML at the bound", src: "locals {\n  y = yamldecode(file(\"ok.yaml\"))\n}\n", files: map[string]string{"ok.yaml": "a: " + deep("[", "]", funcs.MaxDecodeNesting-1) + "\nb: \"" + strings.Repeat("[", 5000) + "\"\nc: it's " + strings.Repeat("{", 5) + "x" + strings.Repeat("}", 5) + "\n"}},
		{name: "YAML hiding brackets behind a quote in a plain scalar", src: "locals {\n  y = yamldecode(file(\"q.yaml\"))\n}\n", files: map[string]string{"q.yaml": "a: 5\" tall\nb: " + deep("[", "]", 2000) + "\nc: \"\n"}, wantErr: "spec.hcl:2:7: Error in function call"},
		{name: "deep JSON", src: "locals {\n  y = jsondecode(file(\"deep.json\"))\n}\n", files: map[string]string{"deep.json": deep("[", "]", 5_000)}, wantErr: "spec.hcl:2:7: Error in function call"},
		{name: "a sweep beyond the phase limit", src: "phase \"a\" {\n  for_each = toset(split(\",\", file(\"keys.txt\")))\n  command  = \"true\"\n}\n", files: map[string]string{"keys.txt": manyKeys(maxPhases + 1)}, wantErr: "spec.hcl:2:14: Too many phases"},
		{name: "two sweeps beyond the phase limit together", src: "phase \"a\" {\n  for_each = toset(split(\",\", file(\"keys.txt\")))\n  command  = \"true\"\n}\nphase \"b\" {\n  for_each = toset(split(\",\", file(\"keys.txt\")))\n  command  = \"true\"\n}\n", files: map[string]string{"keys.txt": manyKeys(maxPhases/2 + 1)}, wantErr: "spec.hcl:6:14: Too many phases"},
		{name: "file() of /dev/zero", src: "locals {\n  z = file(\"/dev/zero\")\n}\n", wantErr: "spec.hcl:2:7: Error in function call"},
		{name: "file() of a FIFO", src: "locals {\n  z = file(\"fifo\")\n}\n", fifo: "fifo", wantErr: "spec.hcl:2:7: Error in function call"},
		{name: "NUL in a command", src: "phase \"a\" {\n  command = \"echo \\u0000\"\n}\n", wantErr: "spec.hcl:2:13: NUL byte in command"},
		{name: "NUL in an argv word", src: "phase \"a\" {\n  command = [\"echo\", \"a\\u0000\"]\n}\n", wantErr: "spec.hcl:2:13: NUL byte in command"},
		{name: "NUL in env", src: "phase \"a\" {\n  command = \"true\"\n  env = { X = \"\\u0000\" }\n}\n", wantErr: "spec.hcl:3:9: NUL byte in env X"},
		{name: "NUL in a param", src: "phase \"a\" {\n  command = \"true\"\n  params = { p = \"\\u0000\" }\n}\n", wantErr: "spec.hcl:3:12: NUL byte in param p"},
		{name: "a backslash-u in a param is no NUL", src: "phase \"a\" {\n  command = \"true\"\n  params = { p = \"\\\\u0000\" }\n}\n"},
		{name: "NUL in an output", src: "phase \"a\" {\n  command = \"true\"\n  outputs = [\"a\\u0000.txt\"]\n}\n", wantErr: "spec.hcl:3:14: NUL byte in output"},
		{name: "NUL in an input", src: "phase \"a\" {\n  command = \"true\"\n  inputs = [\"a\\u0000.txt\"]\n}\n", wantErr: "spec.hcl:3:13: NUL byte in input"},
		{name: "output is the spec file", src: "phase \"a\" {\n  command = \"true\"\n  outputs = [\"spec.hcl\"]\n}\n", wantErr: "spec.hcl:3:14: Output is a file the spec reads"},
		{name: "output is a file read by file()", src: "locals {\n  p = file(\"prompt.txt\")\n}\nphase \"a\" {\n  command = \"true\"\n  outputs = { x = \"out.txt\", y = \"prompt.txt\" }\n}\n", files: map[string]string{"prompt.txt": "hi"}, wantErr: "spec.hcl:6:34: Output is a file the spec reads"},
		{name: "output directory holds a file read by file()", src: "phase \"a\" {\n  command = \"echo ${file(\"data/p.txt\")}\"\n}\nphase \"b\" {\n  command = \"true\"\n  outputs = [\"data\"]\n}\n", files: map[string]string{"data/p.txt": "hi"}, wantErr: "spec.hcl:6:14: Output is a file the spec reads"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.fifo != "" {
				if err := syscall.Mkfifo(filepath.Join(dir, tt.fifo), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "spec.hcl"), []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			var got string
			began := time.Now()
			go func() {
				defer close(done)
				s, diags := NewParser().LoadBytes("spec.hcl", []byte(tt.src), dir, Options{})
				got = firstError(diags)
				if got == "" && s == nil {
					got = "no spec"
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("still loading after 10 s")
			}
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("took %s", took)
			}
			if diff := cmp.Diff(tt.wantErr, got); diff != "" {
				t.Errorf("first error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFileTooLarge: file() refuses a file beyond 64 MiB, by its size,
// before reading it.
func TestFileTooLarge(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "big.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxFileRead + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	src := "locals {\n  b = file(\"big.txt\")\n}\n"
	_, diags := NewParser().LoadBytes("spec.hcl", []byte(src), dir, Options{})
	if diff := cmp.Diff("spec.hcl:2:7: Error in function call", firstError(diags)); diff != "" {
		t.Fatalf("first error (-want +got):\n%s", diff)
	}
	if d := diags[0].Detail; !strings.Contains(d, "larger than 64 MiB") {
		t.Errorf("detail %q does not give the limit", d)
	}
}
