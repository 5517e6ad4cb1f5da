package spec

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// checkSplitFile parses src whole and in pieces and checks the two agree
// exactly: every diagnostic (text and ranges), or the whole *hcl.File
// (bytes, body with every expression's syntax tree and range, navigation).
func checkSplitFile(t *testing.T, src []byte, cuts []int) {
	t.Helper()
	whole, wd := hclsyntax.ParseConfig(src, "experiment.hcl", hcl.Pos{Line: 1, Column: 1})
	got, gd, ok := parsePieces(src, "experiment.hcl", cuts)
	if !ok { // declined: the whole source is parsed
		got, gd = hclsyntax.ParseConfig(src, "experiment.hcl", hcl.InitialPos)
	}
	if diff := cmp.Diff(wd, gd); diff != "" {
		t.Fatalf("cut at %v: diagnostics differ (-whole +split):\n%s", cuts, diff)
	}
	if !reflect.DeepEqual(whole, got) {
		t.Fatalf("cut at %v: files differ (-whole +split):\n%s", cuts, cmp.Diff(bodySummary(whole.Body.(*hclsyntax.Body)), bodySummary(got.Body.(*hclsyntax.Body))))
	}
}

// FuzzParseSplitFile: seeded with every spec in the repository, cut at
// every size, parsing in pieces gives exactly the whole parse's file.
func FuzzParseSplitFile(f *testing.F) {
	for _, pat := range []string{"testdata/*/*.hcl", "../examples/*/*.hcl"} {
		paths, _ := filepath.Glob(pat)
		for _, p := range paths {
			src, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(src)
		}
	}
	f.Add(layeredSpec(4))
	f.Add([]byte("a {\n  x = <<-EOT\n  }\n  b {\n  EOT\n}\nb {\n}\n"))
	f.Add([]byte("a {\n  x = \"%{ if true }\n}\nb {\n%{ endif }\"\n}\n"))
	f.Add([]byte("x = (\n  1\n}\ny {\n)\n"))
	f.Add([]byte("x = [\n  1,\n]\ny {\n}\n"))
	f.Add([]byte("a {\n}\r\n\r\nb {\r\n}"))
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 4<<10 {
			return // large inputs make minimising crawl; the seeds fit
		}
		// Every line start is tried as a cut, alone, then the places
		// splitPoints would cut at, all at once: the join must be the
		// whole parse, or fall back to it.
		var all []int
		for i, c := range src {
			if c == '\n' && i+1 < len(src) && len(all) < 24 {
				all = append(all, i+1)
				checkSplitFile(t, src, []int{i + 1})
			}
		}
		var blocks []int
		for c := nextBlockStart(src, 0); c >= 0 && c < len(src); c = nextBlockStart(src, c) {
			blocks = append(blocks, c)
		}
		if len(blocks) > 0 {
			checkSplitFile(t, src, blocks)
		}
		if len(all) > 0 {
			checkSplitFile(t, src, all)
		}
	})
}
