package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: loading any bytes never panics, and every diagnostic's range
// lies inside the input.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"phase \"a\" {\n  command = \"true\"\n  outputs = [\"x\"]\n}\n",
		"locals {\n  x = (((((abs(1)))))\n  y = yamldecode(\"a: [[[1]]]\\nb: \\\"[\\\"\")\n  z = jsondecode(\"[[{\\\"a\\\": \\\"[\\\"}]]\")\n}\nphase \"a\" { command = \"echo \\u0000\" }\n",
		"variable \"v\" { default = 1 }\nlocals { a = var.v }\nphase \"b\" { command = \"echo ${local.a}\" }\n",
		"phase \"a\" { command = \"x\"\n outputs = { o = \"o\" } }\nphase \"b\" { command = \"cat ${phase.a.outputs.o}\" inputs = [\"o\"] }\n",
		"experiment \"e\" {\n concurrency = 2\n cache { dir = \"c\" }\n}\n",
		"phase \"a\" { command = [\"sh\", \"-c\", \"true\"]\n depends_on = [phase.a] }",
		"variable \"m\" {\n type = set(string)\n default = [\"x\", \"y\"]\n validation {\n condition = length(var.m) > 0\n error_message = \"empty\"\n }\n}\npool \"api\" { size = 1 }\nphase \"h\" {\n for_each = var.m\n command = \"echo ${each.value} > h-${each.key}\"\n outputs = { o = \"h-${each.key}\" }\n resources = { api = 1 }\n}\nphase \"e\" {\n for_each = phase.h\n command = \"cat ${each.value.outputs.o}\"\n}\n",
		"experiment \"e\" {\n budget { max_cost = 2 }\n}\nphase \"a\" {\n command = \"echo ${env(\"X\")}\"\n budget {\n timeout = \"1m\"\n retries = 1\n max_cost = 0.5\n max_iterations = 3\n }\n}\n",
		"phase \"a\" {\n command = \"echo ${1e-9000} 2.5E+99999\"\n params = { lr = 1e-80000, s = \"1e-80000\" }\n}\n",
		"variable \"t\" {\n sensitive = true\n default = \"abc\"\n}\nphase \"a\" { command = \"echo ${var.t} ${phase.b[\"k\"].outputs.x}\" }\nphase \"b\" {\n for_each = { k = 1 }\n command = \"true\"\n outputs = { x = \"x-${each.key}\" }\n}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		_, diags := NewParser().LoadBytes("fuzz.hcl", src, "/w", Options{})
		lines := strings.Count(string(src), "\n") + 1
		for _, d := range diags {
			if d.Subject == nil || d.Subject.Filename != "fuzz.hcl" {
				continue
			}
			r := d.Subject
			if r.Start.Byte < 0 || r.End.Byte > len(src) || r.Start.Byte > r.End.Byte {
				t.Fatalf("diagnostic %q has byte range %d..%d outside input of %d bytes", d.Summary, r.Start.Byte, r.End.Byte, len(src))
			}
			if r.Start.Line < 1 || r.End.Line > lines {
				t.Fatalf("diagnostic %q has lines %d..%d outside input of %d lines", d.Summary, r.Start.Line, r.End.Line, lines)
			}
		}
	})
}

// FuzzVarFile: a -var-file of any content is read, or refused with
// diagnostics, without panicking.
func FuzzVarFile(f *testing.F) {
	f.Add([]byte("lr = 0.1\nname = \"x\"\nlayers = [1, 2]\n"))
	f.Add([]byte("a = var.b\n"))
	f.Add([]byte("block {\n}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "vars.hcl")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		vals, diags := NewParser().loadVarFile(p)
		if !diags.HasErrors() {
			for _, v := range vals {
				if v.Name == "" || v.File != p {
					t.Fatalf("variable %+v from %q", v, b)
				}
			}
		}
	})
}
