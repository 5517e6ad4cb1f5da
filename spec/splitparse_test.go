package spec

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// withSplitMin lowers the size from which sources are split, for a test.
func withSplitMin(t testing.TB, n int) {
	old := splitMin
	splitMin = n
	t.Cleanup(func() { splitMin = old })
}

// bodySummary writes what a body holds, recursively: every attribute's
// name, expression type and range, every block's type, labels and
// ranges, in order. Two parses of the same source agree on it exactly.
func bodySummary(b *hclsyntax.Body) string {
	var s strings.Builder
	var walk func(b *hclsyntax.Body, depth int)
	walk = func(b *hclsyntax.Body, depth int) {
		ind := strings.Repeat("  ", depth)
		for _, name := range sortedKeys(b.Attributes) {
			a := b.Attributes[name]
			fmt.Fprintf(&s, "%sattr %s %T %v %v\n", ind, name, a.Expr, a.SrcRange, a.Expr.Range())
			for _, v := range a.Expr.Variables() {
				fmt.Fprintf(&s, "%s  var %s %v\n", ind, v.RootName(), v.SourceRange())
			}
		}
		for _, blk := range b.Blocks {
			fmt.Fprintf(&s, "%sblock %s %q %v %v %v\n", ind, blk.Type, blk.Labels, blk.TypeRange, blk.OpenBraceRange, blk.CloseBraceRange)
			walk(blk.Body, depth+1)
		}
		fmt.Fprintf(&s, "%send %v %v\n", ind, b.SrcRange, b.EndRange)
	}
	walk(b, 0)
	return s.String()
}

// checkSplit parses src whole and split, and checks they agree: the same
// diagnostics, or the same body.
func checkSplit(t *testing.T, name string, src []byte) (split bool) {
	t.Helper()
	whole, wd := hclsyntax.ParseConfig(src, "experiment.hcl", hcl.Pos{Line: 1, Column: 1})
	got, gd := parseSpec(src, "experiment.hcl")
	if diff := cmp.Diff(wd.Error(), gd.Error()); diff != "" {
		t.Fatalf("%s: diagnostics differ (-whole +split):\n%s", name, diff)
	}
	if wd.HasErrors() {
		return len(splitPoints(src, 2)) > 0
	}
	if !bytes.Equal(got.Bytes, src) {
		t.Fatalf("%s: the file's bytes are not the source", name)
	}
	if diff := cmp.Diff(bodySummary(whole.Body.(*hclsyntax.Body)), bodySummary(got.Body.(*hclsyntax.Body))); diff != "" {
		t.Fatalf("%s: bodies differ (-whole +split):\n%s", name, diff)
	}
	return len(splitPoints(src, 2)) > 0
}

// TestParseSplitMatchesWhole: a spec parsed in pieces is the spec parsed
// whole: the same body, the same model, and the same diagnostics for
// sources that cannot be cut where the cut is guessed.
func TestParseSplitMatchesWhole(t *testing.T) {
	withSplitMin(t, 256)
	layered, sweep := layeredSpec(200), sweepSpec(300)
	// Each trap lies just after the middle of its source, where the cut is
	// looked for: a "}" line followed by a line starting with a letter,
	// inside a heredoc, a comment, or a block (closed at column 0).
	pad := strings.Repeat("# padding line\n", 40)
	trap := func(s string) []byte { return []byte(pad + s + "phase \"b\" {\n  command = \"true\"\n}\n") }
	heredoc := trap("phase \"a\" {\n  command = <<EOT\necho {\n}\nphase \"fake\" {\nEOT\n  outputs = [\"a\"]\n}\n")
	comment := trap("/* a comment\n}\nphase \"c\" {\n*/\n")
	nested := trap("phase \"a\" {\n  command = \"true\"\n  budget {\n    timeout = \"1s\"\n}\nretries = 1\n}\n")
	dupAttr := []byte("x = 1\n" + pad + "phase \"a\" {\n  command = \"true\"\n}\n\nx = 2\n")
	badLate := append(append([]byte{}, layered...), "phase \"z\" {\n  command = \n}\n"...)
	tests := []struct {
		name      string
		src       []byte
		wantSplit bool // the source is large enough and has block ends to cut at
	}{
		{"layered", layered, true},
		{"for_each sweep (one block per sweep)", sweep, false},
		{"crlf", bytes.ReplaceAll(layered, []byte("\n"), []byte("\r\n")), true},
		{"heredoc holding a block end", heredoc, true},
		{"block comment holding a block end", comment, true},
		{"nested block closed at column 0", nested, true},
		{"attribute set twice, in two pieces", dupAttr, true},
		{"syntax error in the last piece", badLate, true},
		{"small", []byte("phase \"a\" {\n  command = \"true\"\n}\n"), false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		if got := checkSplit(t, tt.name, tt.src); got != tt.wantSplit {
			t.Errorf("%s: split points found: %v, want %v", tt.name, got, tt.wantSplit)
		}
	}

	// The model: LoadBytes through the pieces and through a whole parse
	// (registered first, so LoadBytes takes it as parsed).
	for _, src := range [][]byte{layered, sweep} {
		dir := t.TempDir()
		path := filepath.Join(dir, "experiment.hcl")
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		ref := NewParser()
		if _, d := ref.p.ParseHCL(src, path); d.HasErrors() {
			t.Fatal(d)
		}
		want, wd := ref.LoadBytes(path, src, dir, Options{})
		got, gd := NewParser().LoadBytes(path, src, dir, Options{})
		if wd.HasErrors() || gd.HasErrors() {
			t.Fatalf("whole: %v; split: %v", wd, gd)
		}
		sameSpec(t, want, got)
	}
}

// TestParseSplitDiagnosticContext: an evaluation error in a phase of a
// later piece is rendered with its source line and its block's context,
// as from a whole parse.
func TestParseSplitDiagnosticContext(t *testing.T) {
	withSplitMin(t, 256)
	src := append(layeredSpec(50), "phase \"late\" {\n  command = \"echo ${var.nope}\"\n}\n"...)
	render := func(p *Parser) string {
		_, diags := p.LoadBytes("experiment.hcl", src, t.TempDir(), Options{})
		if !diags.HasErrors() {
			t.Fatal("no error for an undeclared variable")
		}
		var b bytes.Buffer
		w := hcl.NewDiagnosticTextWriter(&b, p.Files(), 100, false)
		if err := w.WriteDiagnostics(diags); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	ref := NewParser()
	ref.p.ParseHCL(src, "experiment.hcl")
	want, got := render(ref), render(NewParser())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rendered diagnostics (-whole +split):\n%s", diff)
	}
	if !strings.Contains(got, `in phase "late"`) || !strings.Contains(got, "var.nope") {
		t.Errorf("the diagnostic lacks its context or its source line:\n%s", got)
	}
}

// FuzzParseSplit: whatever the source, parsing it in pieces gives the
// whole parse's diagnostics or its body.
func FuzzParseSplit(f *testing.F) {
	f.Add([]byte(layeredSpec(3)))
	f.Add([]byte("x = 1\n}\ny = 2\n"))
	f.Add([]byte("a {\n}\nb = <<EOT\n}\nc {\nEOT\n"))
	f.Add([]byte("/*\n}\nz {\n*/\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		withSplitMin(t, 2)
		checkSplit(t, "fuzz", src)
	})
}

// BenchmarkParseSplit: a generated spec of 1,000 phases, parsed whole and
// in pieces.
func BenchmarkParseSplit(b *testing.B) {
	src := layeredSpec(1000)
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			hclsyntax.ParseConfig(src, "experiment.hcl", hcl.Pos{Line: 1, Column: 1})
		}
	})
	b.Run("split", func(b *testing.B) {
		for b.Loop() {
			parseSplit(src, "experiment.hcl")
		}
	})
}
