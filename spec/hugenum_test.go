package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// TestHugeExponent: a number literal whose exponent is beyond ±4096 is
// an error at its file:line:col, given at once (HCL took 5 s to read
// 1e-80000); one in a string, a comment or a heredoc is no number, and
// numbers up to the bound load as before.
func TestHugeExponent(t *testing.T) {
	tests := []struct {
		name    string
		params  string
		wantErr string // "" when the spec loads
	}{
		{"negative exponent", `{ lr = 1e-80000 }`, "spec.hcl:4:20: Number out of range"},
		{"positive exponent, capital E", `{ n = 2.5E+9999999 }`, "spec.hcl:4:19: Number out of range"},
		{"inside an interpolation", `{ s = "x${1e-90000}" }`, "spec.hcl:4:23: Number out of range"},
		{"in a string", `{ s = "1e-80000" }`, ""},
		{"at the bound", `{ a = 1e4096, b = 1e-4096, c = 0.5e-05 }`, ""},
		{"ordinary", `{ lr = 3e-4, n = 10 }`, ""},
		{"tonumber of a string", `{ lr = tonumber("1e-80000") }`, "spec.hcl:4:30: Invalid function argument"},
		{"tonumber at the bound", `{ lr = tonumber("1e-4096"), n = tonumber("12") }`, ""},
		{"tonumber of a binary exponent", `{ lr = tonumber("1p-265000") }`, "spec.hcl:4:30: Invalid function argument"},
		{"tonumber of a binary exponent, capital P", `{ n = tonumber("1P+265000") }`, "spec.hcl:4:29: Invalid function argument"},
		{"tonumber of a binary exponent at the bound", `{ a = tonumber("1p-13606"), b = tonumber("1p13606") }`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "# 1e-999999 in a comment is no number\nphase \"a\" {\n  command = \"echo a > a.txt\"\n  params  = " + tt.params + "\n  outputs = [\"a.txt\"]\n}\n"
			began := time.Now()
			s, diags := NewParser().LoadBytes("spec.hcl", []byte(src), t.TempDir(), Options{})
			if took := time.Since(began); took > 2*time.Second {
				t.Errorf("took %s", took)
			}
			if diff := cmp.Diff(tt.wantErr, firstError(diags)); diff != "" {
				t.Errorf("first error (-want +got):\n%s\n%v", diff, diags)
			}
			if tt.wantErr == "" && s == nil {
				t.Errorf("no spec")
			}
		})
	}
}

// firstError renders the first error of diags as file:line:col: summary,
// or "" when there is none.
func firstError(diags hcl.Diagnostics) string {
	if !diags.HasErrors() {
		return ""
	}
	d := diags[0]
	return fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, d.Summary)
}

// TestHugeExponentVars: the same bound for -var values and -var-file
// numbers.
func TestHugeExponentVars(t *testing.T) {
	dir := t.TempDir()
	vf := filepath.Join(dir, "big.vars")
	if err := os.WriteFile(vf, []byte("lr = 1e-70000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := []byte("variable \"lr\" {\n  type = number\n  default = 0.1\n}\nphase \"a\" {\n  command = \"echo ${var.lr} > a.txt\"\n  outputs = [\"a.txt\"]\n}\n")
	for _, opts := range []Options{
		{Vars: []VarValue{{Name: "lr", Value: "1e-70000"}}},
		{VarFiles: []string{vf}},
	} {
		_, diags := NewParser().LoadBytes("spec.hcl", src, dir, opts)
		if !diags.HasErrors() || !strings.Contains(diags.Error(), "beyond ±4096") {
			t.Errorf("%+v: %v, want the exponent refused", opts, diags)
		}
	}
}

// TestHugeNumberValues: a number beyond the bound made from text (string
// arithmetic, jsondecode, a number variable given a quoted value) is an
// error where it is made, given at once: reading it was quick, writing it
// out took seconds (4.6 s for "1e-80000" + 0) to minutes. Strings
// holding such numbers stay strings, and ordinary numbers pass.
func TestHugeNumberValues(t *testing.T) {
	tests := []struct {
		name, src, wantErr string
	}{
		{"string arithmetic in a local", "locals {\n  x = \"1e-80000\" + 0\n}\n", "spec.hcl:2:7: Number out of range"},
		{"jsondecode in a local", "locals {\n  x = { lr = jsondecode(\"1e-80000\") }\n}\n", "spec.hcl:2:7: Number out of range"},
		{"binary exponent", "locals {\n  x = [abs(\"1p-300000\")]\n}\n", "spec.hcl:2:7: Number out of range"},
		{"quoted default of a number variable", "variable \"lr\" {\n  type    = number\n  default = \"1e-80000\"\n}\n", "spec.hcl:1:1: Number out of range"},
		{"ordinary numbers", "locals {\n  ok = [1, 2.5e10, -3e-200]\n}\n", ""},
		{"a string stays a string", "locals {\n  s = \"1e-80000\"\n  n = 1e-300 * 3\n}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.src + "phase \"a\" {\n  command = \"echo a > a.txt\"\n  outputs = [\"a.txt\"]\n}\n"
			began := time.Now()
			_, diags := NewParser().LoadBytes("spec.hcl", []byte(src), t.TempDir(), Options{})
			if took := time.Since(began); took > 2*time.Second {
				t.Errorf("took %s", took)
			}
			if diff := cmp.Diff(tt.wantErr, firstError(diags)); diff != "" {
				t.Errorf("first error (-want +got):\n%s\n%v", diff, diags)
			}
		})
	}
	// A number beyond the bound that reaches params some other way is
	// refused by the params' encoding, not written out.
	if _, err := canonicalJSON(cty.ObjectVal(map[string]cty.Value{"lr": cty.MustParseNumberVal("1e-80000")})); err == nil || !strings.Contains(err.Error(), "beyond") {
		t.Errorf("canonicalJSON of a huge number: %v", err)
	}
}

// TestParserReuse: a Parser loading the same file name again parses new
// bytes, and gives the errors of a file that had errors every time (it
// kept the first bytes, and an erroneous file as if clean).
func TestParserReuse(t *testing.T) {
	const good1 = "phase \"a\" {\n  command = \"echo 1 > a.txt\"\n  outputs = [\"a.txt\"]\n}\n"
	const good2 = "phase \"b\" {\n  command = \"echo 2 > b.txt\"\n  outputs = [\"b.txt\"]\n}\n"
	const bad = "phase \"a\" {\n  command = \n}\n"
	const huge = "phase \"a\" {\n  command = \"x\"\n  params = { lr = 1e-90000 }\n}\n"
	p := NewParser()
	dir := t.TempDir()
	for i, step := range []struct {
		src     string
		wantErr bool
		phase   string
	}{
		{good1, false, "a"},
		{good1, false, "a"},
		{good2, false, "b"},
		{bad, true, ""},
		{bad, true, ""},
		{huge, true, ""},
		{huge, true, ""},
		{good1, false, "a"},
	} {
		s, diags := p.LoadBytes("experiment.hcl", []byte(step.src), dir, Options{})
		if diags.HasErrors() != step.wantErr {
			t.Fatalf("step %d: errors %v, want %v: %v", i, diags.HasErrors(), step.wantErr, diags)
		}
		if step.phase != "" && (s == nil || s.Phase(step.phase) == nil) {
			t.Fatalf("step %d: no phase %s in the spec", i, step.phase)
		}
	}
}
