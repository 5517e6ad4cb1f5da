package spec

import (
	"strings"
	"testing"
)

// FuzzParse: loading any bytes never panics, and every diagnostic's range
// lies inside the input.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"phase \"a\" {\n  command = \"true\"\n  outputs = [\"x\"]\n}\n",
		"variable \"v\" { default = 1 }\nlocals { a = var.v }\nphase \"b\" { command = \"echo ${local.a}\" }\n",
		"phase \"a\" { command = \"x\"\n outputs = { o = \"o\" } }\nphase \"b\" { command = \"cat ${phase.a.outputs.o}\" inputs = [\"o\"] }\n",
		"experiment \"e\" {\n concurrency = 2\n cache { dir = \"c\" }\n}\n",
		"phase \"a\" { command = [\"sh\", \"-c\", \"true\"]\n depends_on = [phase.a] }",
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
