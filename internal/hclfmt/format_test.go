package hclfmt

import (
	"bytes"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/rogpeppe/go-internal/txtar"
)

// formatCases are small inputs, each for one rule of the layout; every
// one must parse.
var formatCases = []struct{ name, src string }{
	{"empty", ""},
	{"blank lines only", "\n\n\n"},
	{"blanks only", "   "},
	{"tab only", "\t"},
	{"no final newline", "a = 1\nbb = 2"},
	{"no final newline after comment", "a = 1 # c"},
	{"no final newline after block comment", "a = 1 /* c */"},
	{"trailing blanks at end of file", "a = 1   "},
	{"trailing tab at end of file", "a = 1\t"},
	{"blanks on blank lines", "a = 1\n   \n\t\nb = 2\n"},
	{"crlf", "a = 1\r\nbb = 2 # c\r\nblock {\r\nx=1\r\n  yy = [\r\n1,\r\n]\r\n}\r\n"},
	{"crlf heredoc", "a = <<EOT\r\nx ${ y }\r\nEOT\r\nb = 2\r\n"},
	{"tabs", "phase\t\"a\"\t{\n\tcommand\t=\t\"x\"\n\t\tb   =    2\n}\n"},
	{"nested blocks", "a {\nb {\nc {\nd = 1\n}\n}\n}\n"},
	{"one-line blocks", "phase \"a\" { command = \"x\" }\nempty {}\nb \"x\" \"y\" {}\nc {   }\n"},
	{"attribute run", "a = 1\nbbb = 2\ncc = 3\n"},
	{"run cut by blank line", "a = 1\nbbb = 2\n\ncc = 3\nd = 4\n"},
	{"run cut by comment line", "a = 1\n# note\nbbb = 2\n"},
	{"run cut by block", "a = 1\nb {\nccc = 1\n}\ndddd = 2\n"},
	{"run with comments", "a = 1 # one\nbbb = 2 // two\ncc = 3 /* three */\nd = 4 # four\n"},
	{"comments without run", "a {\n} # end\nb = [ # open\n1, # one\n222, # many\n]\n"},
	{"comment alone", "# hash\n// slash\n/* block */\n  # indented\n"},
	{"block comment over lines", "a = /* one\n two */ 1 # c\nbb = 2 # d\n"},
	{"comment before attribute", "/* c */ a = 1\nbb = 2\n"},
	{"single-line object", "a = {a=1,bb=2}\nb = { }\nc = {}\nd = {\"k\"=1}\n"},
	{"single-line list", "a = [1,2 , 3]\nb = [ ]\nc = [[1],[2]]\n"},
	{"multi-line object", "x = {\na = 1\nbbb = 2 # c\n\"quoted key\" = 3\n(var.k) = 4\n}\n"},
	{"multi-line list", "y = [\n1,\n2,\n]\n"},
	{"object with colons", "a = {a: 1, \"b\": 2}\n"},
	{"brackets closed one by one", "a = foo({\nb = 1\n}\n)\nc = [[[\n1\n]\n]]\n"},
	{"brackets over lines", "a = foo({\nb = 1\n})\nx = [[\n1\n]]\ny = [\n[1,\n2],\n]\n"},
	{"heredoc", "a = <<EOT\n  hello ${ name }\n  %{ if x }yes%{ endif }\nEOT\nb = 1\n"},
	{"flush heredoc", "a {\nb = <<-EOT\n    indented\n      ${ x }\n    EOT\n}\n"},
	{"heredoc in list", "a = [<<EOT\nx\nEOT\n, \"y\"]\n"},
	{"heredoc in call", "a = f(<<EOT\nx\nEOT\n)\n"},
	{"heredoc with comment in interpolation", "a = <<EOT\n${x # c\n}y\nEOT\nbb = 1 # d\n"},
	{"quoted template", "a = \"a ${ b.c } d %{ if x }y%{ else }z%{ endif } ${ f( 1,2 ) }\"\n"},
	{"template for", "a = \"%{ for i in l }${i}, %{ endfor }\"\n"},
	{"template strip markers", "a = \"${~ a ~}\"\n"},
	{"template object", "a = \"${ {a=1}.a }\"\nb = \"${ {a=1} }\"\n"},
	{"template escapes", "a = \"$${x} %%{x} \\\" \\\\ \\n\"\n"},
	{"adjacent interpolations", "a = \"${a}${b}%{if c}${d}%{endif}\"\n"},
	{"interpolation over lines", "a = \"${\n  a + b\n}\"\n"},
	{"unary minus", "a = - 1\nb = -x\nc = 1 - -1\nd = [ -1, - 2 ]\ne = (-1)\nf = x - 1\n"},
	{"minus at start of line", "a = [\n-1,\n- 2\n]\n"},
	{"bang", "a = ! true\nb = !a && ! b\nc = !(a || b)\n"},
	{"conditional", "a = x ? y : z\nb = x==1?\"a\":\"b\"\nc = a ? -1 : -2\n"},
	{"for list", "a = [ for x in y : x if z ]\nb = [for x in [1,2]: x]\n"},
	{"for object", "a = {for k, v in m : k => v...}\nb = {for k,v in m: k=>v if v>0}\n"},
	{"splats", "a = b.*.c\nb = e[*].f\nc = h [ * ] . i\nd = x.y[*]\n"},
	{"traversal", "a = b.c[0][\"k\"].d\nb = var.list [ 0 ]\nc = f(x)[0]\nd = {a=1}[\"a\"]\ne = [1][0]\nf = b.0\n"},
	{"calls", "a = concat( x , y... )\nb = f()\nc = provider::p::f(1)\nd = upper( \"x\" )\n"},
	{"arithmetic", "a = 1+2*3/4%5\nb = (1+2)*3\nc = 1-(-1)\n"},
	{"comparison", "a = x>=1 && y<=2 || z!=3\nb = a==b\nc = 1 > 2\nd = 1<2\n"},
	{"unicode names", "naïve = 1 # c\nx = 2 # c\n"},
	{"unicode widths", "m = {\n\"e\u0301\" = 1 # e and a combining accent\nx = 2 # c\n\"日本\" = 3\n\"👍🏽\" = 4 # emoji and a skin tone\n}\n"},
	{"unicode in multi-line value", "a = /* ü\n é */ 1 # c\nbb = 2 # d\n"},
	{"crlf in multi-line unicode value", "a = /* ü\r\n é */ 1 # c\r\nbb = 2 # d\r\n"},
	{"long unicode literal", "a = \"" + strings.Repeat("é", 3000) + "\" # c\nb = 1 # d\n"},
	{"long combining literal", "a = \"" + strings.Repeat("e\u0301", 2000) + "\" # c\nb = 1 # d\n"},
	{"lone carriage return in comment", "a = /* x\ry */ 1 # c\nbb = 2 # d\n"},
	{"invalid UTF-8 in comment", "a = /* x\xffy\n\xfe */ 1 # c\nbb = 2 # d\n"},
}

// Long tokens: hclwrite measures them with a buffer of 4 KB, then up to
// 64 KB, and miscounts characters cut by its end; Format must miscount
// them alike. Each is in a cell whose width counts.
func init() {
	combining := strings.Repeat("e\u0301", 3)
	long := strings.Repeat(combining, 1500)
	var lf, crlf, cr, bad strings.Builder
	for i := 0; lf.Len() < 9000; i++ {
		// lines of varied length, so line breaks fall on every offset
		line := strings.Repeat(combining, i%7) + strings.Repeat("x", i%5)
		lf.WriteString(line + "\n")
		crlf.WriteString(line + "\r\n")
		cr.WriteString(line + "\r")
		bad.WriteString(line + "\xff\n")
	}
	formatCases = append(formatCases, []struct{ name, src string }{
		{"long comment, LF", "a = /*" + lf.String() + "*/ 1 # c\nbb = 2 # d\n"},
		{"long comment, CRLF", "a = /*" + crlf.String() + "*/ 1 # c\r\nbb = 2 # d\r\n"},
		{"long comment, CR", "a = /*" + cr.String() + "*/ 1 # c\nbb = 2 # d\n"},
		{"long comment, invalid UTF-8", "a = /*" + bad.String() + "*/ 1 # c\nbb = 2 # d\n"},
		{"long comment in lead", "/*" + lf.String() + "*/ a = 1\nbb = 2\n"},
		{"comment over 64 KB in lead", "/*\n" + strings.Repeat("x", 70000) + "\n*/ a = 1\nbb = 2\n"},
		{"comment over 64 KB, unicode", "a = /*" + combining + "\n" + strings.Repeat(combining+"\n", 9000) + "*/ 1 # c\nbb = 2 # d\n"},
		{"long heredoc lines", "a = <<EOT\n" + long + "\n" + long + "${x # c\n} ${y # d\n}\nEOT\n"},
		{"long heredoc lines, CRLF", "a = <<EOT\r\n" + long + "\r\n" + long + "${x # c\r\n} ${y # d\r\n}\r\nEOT\r\n"},
	}...)
}

// hclwriteWant is what Format must return for src, which parses:
// hclwrite.Format's result, unless that result lexes to other tokens than
// src, in which case Format keeps src as it is (kept is then true).
// hclwrite does that to a number followed by ".digits": "1 .5" becomes
// the number 1.5 and "a.0 .1" the token "0.1".
func hclwriteWant(src []byte) (want []byte, kept bool) {
	want = hclwrite.Format(src)
	if !cmp.Equal(lexed(src), lexed(want)) {
		return src, true
	}
	return want, false
}

// lexed lists src's tokens as type and text, blanks left out.
func lexed(src []byte) []string {
	toks, _ := hclsyntax.LexConfig(src, "", hcl.InitialPos)
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = t.Type.String() + " " + string(t.Bytes)
	}
	return out
}

func parses(src []byte) bool {
	_, diags := hclparse.NewParser().ParseHCL(src, "in.hcl")
	return !diags.HasErrors()
}

// checkFormat checks Format on src, which parses: it gives hclwrite's
// result (or src, where that changes tokens), keeps src's tokens, is
// idempotent, and its layout is hclwrite's even where it falls back.
func checkFormat(t *testing.T, src []byte) {
	t.Helper()
	got := Format(src)
	want, kept := hclwriteWant(src)
	if !bytes.Equal(got, want) {
		t.Fatalf("Format(%q) differs from hclwrite.Format (-want +got):\n%s", src, lineDiff(want, got))
	}
	if diff := cmp.Diff(lexed(src), lexed(got)); diff != "" {
		t.Fatalf("Format(%q) changed tokens (-in +out):\n%s", src, diff)
	}
	if again := Format(got); !bytes.Equal(again, got) {
		t.Fatalf("Format is not idempotent on %q (-once +twice):\n%s", src, lineDiff(got, again))
	}
	if kept {
		toks, _ := hclsyntax.LexConfig(src, "", hcl.InitialPos)
		if lay, hw := layout(toks), hclwrite.Format(src); !bytes.Equal(lay, hw) {
			t.Fatalf("layout(%q) differs from hclwrite.Format (-hclwrite +layout):\n%s", src, lineDiff(hw, lay))
		}
	}
}

func lineDiff(a, b []byte) string {
	return cmp.Diff(strings.SplitAfter(string(a), "\n"), strings.SplitAfter(string(b), "\n"))
}

// corpusFile is one input of the differential test and a fuzz seed.
type corpusFile struct {
	name string
	src  []byte
}

var (
	corpusOnce sync.Once
	corpus     []corpusFile
	corpusErr  error
)

// formatCorpus gathers every HCL text of the repository: the .hcl files
// (examples, testdata), the .hcl sections of txtar archives (decode
// goldens, CLI scripts) and two bench/gen workloads, a layered DAG and a
// for_each sweep. Some do not parse (files showing syntax errors); the
// caller skips those.
func formatCorpus(tb testing.TB) []corpusFile {
	tb.Helper()
	corpusOnce.Do(func() { corpus, corpusErr = readCorpus(tb.TempDir) })
	if corpusErr != nil {
		tb.Fatal(corpusErr)
	}
	return corpus
}

func readCorpus(tempDir func() string) ([]corpusFile, error) {
	var files []corpusFile
	const root = "../.."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") || d.Name() == "fuzz" {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".hcl":
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files = append(files, corpusFile{path, src})
		case ".txtar":
			ar, err := txtar.ParseFile(path)
			if err != nil {
				return err
			}
			for _, f := range ar.Files {
				if strings.HasSuffix(f.Name, ".hcl") {
					files = append(files, corpusFile{path + ":" + f.Name, f.Data})
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, args := range [][]string{{"-n", "30", "-no-inputs"}, {"-foreach", "20"}} {
		src, err := genSpec(tempDir(), args...)
		if err != nil {
			return nil, err
		}
		files = append(files, corpusFile{"bench/gen " + strings.Join(args, " "), src})
	}
	return files, nil
}

// genSpec runs bench/gen with args and returns the experiment.hcl it
// wrote in dir.
func genSpec(dir string, args ...string) ([]byte, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(goTool, append([]string{"run", "../../bench/gen", "-o", dir}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, &genError{args, err, out}
	}
	return os.ReadFile(filepath.Join(dir, "experiment.hcl"))
}

type genError struct {
	args []string
	err  error
	out  []byte
}

func (e *genError) Error() string {
	return "go run ../../bench/gen " + strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + string(e.out)
}

// TestFormatCases compares Format with hclwrite.Format on the hand-written
// cases.
func TestFormatCases(t *testing.T) {
	for _, c := range formatCases {
		t.Run(c.name, func(t *testing.T) {
			src := []byte(c.src)
			if !parses(src) {
				t.Fatalf("case does not parse: %q", src)
			}
			checkFormat(t, src)
		})
	}
}

// TestFormatCorpus compares Format with hclwrite.Format on every HCL text
// of the repository that parses.
func TestFormatCorpus(t *testing.T) {
	n := 0
	for _, f := range formatCorpus(t) {
		mustParse := strings.Contains(f.name, filepath.Join("testdata", "format")) || strings.HasPrefix(f.name, "bench/gen")
		if !parses(f.src) {
			if mustParse {
				t.Errorf("%s does not parse", f.name)
			}
			continue
		}
		n++
		t.Run(f.name, func(t *testing.T) { checkFormat(t, f.src) })
	}
	// 26 .hcl files, 31 CLI scripts and the decode goldens at the time
	// of writing: far fewer means the walk lost its way.
	if n < 50 {
		t.Errorf("only %d parsing HCL texts found in the repository", n)
	}
	t.Logf("%d HCL texts compared", n)
}

// TestFormatRespaced compares Format with hclwrite.Format on variants of
// the cases and the corpus with the blanks between tokens redrawn at
// random: none or some spaces and tabs, deeper or shallower indentation,
// line breaks after openers and commas, CRLF line ends. The variants that
// still parse are checked; they try the indentation and alignment rules
// on far more layouts than were written by hand.
func TestFormatRespaced(t *testing.T) {
	var inputs []corpusFile
	for _, c := range formatCases {
		inputs = append(inputs, corpusFile{c.name, []byte(c.src)})
	}
	inputs = append(inputs, formatCorpus(t)...)
	checked := 0
	for _, in := range inputs {
		if len(in.src) > 16<<10 || !parses(in.src) {
			continue
		}
		rng := rand.New(rand.NewPCG(uint64(len(in.src)), uint64(checked)))
		for range 20 {
			v := respace(rng, mustLex(t, in.src))
			if !parses(v) {
				continue
			}
			checked++
			t.Run(in.name, func(t *testing.T) { checkFormat(t, v) })
		}
	}
	if checked < 1000 {
		t.Errorf("only %d respaced variants parse", checked)
	}
	t.Logf("%d respaced variants compared", checked)
}

// respace writes toks out with new blanks between them wherever the
// lexer skips blanks, so the variant has the same tokens (line ends
// aside).
func respace(rng *rand.Rand, toks hclsyntax.Tokens) []byte {
	blanks := []string{"", " ", " ", "  ", "\t", "    ", " \t "}
	crlf := rng.IntN(4) == 0
	var out []byte
	for i, tok := range toks {
		if i > 0 && mainModeGap(toks[i-1].Type, tok.Type) {
			a := toks[i-1].Type
			switch {
			case (a == hclsyntax.TokenOBrace || a == hclsyntax.TokenOBrack || a == hclsyntax.TokenOParen || a == hclsyntax.TokenComma) && rng.IntN(6) == 0:
				out = append(out, '\n')
			case tok.Range.Start.Byte > toks[i-1].Range.End.Byte || a == hclsyntax.TokenNewline || rng.IntN(3) == 0:
				// Keep at least one blank where there was one: two
				// names or numbers must stay apart.
				b := blanks[rng.IntN(len(blanks))]
				if b == "" && tok.Range.Start.Byte > toks[i-1].Range.End.Byte {
					b = " "
				}
				out = append(out, b...)
			}
		}
		if crlf && tok.Type == hclsyntax.TokenNewline {
			out = append(out, "\r\n"...)
			continue
		}
		out = append(out, tok.Bytes...)
	}
	return out
}

// mainModeGap reports whether the lexer, between tokens of types a and b,
// is outside template text, where blanks are skipped rather than kept.
func mainModeGap(a, b hclsyntax.TokenType) bool {
	switch a {
	case hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc, hclsyntax.TokenCHeredoc,
		hclsyntax.TokenQuotedLit, hclsyntax.TokenStringLit, hclsyntax.TokenTemplateSeqEnd,
		hclsyntax.TokenEOF:
		return false
	}
	switch b {
	case hclsyntax.TokenQuotedLit, hclsyntax.TokenStringLit, hclsyntax.TokenCQuote,
		hclsyntax.TokenCHeredoc, hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
		return false
	}
	return true
}

// TestFormatLayout pins a few layouts in full, the rules as a reader of
// cairn fmt meets them.
func TestFormatLayout(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{
			name: "indent, spaces, aligned equals",
			in:   "phase \"a\" {\ncommand = \"true\"\n    outputs = [\"x\"]\n  params = { a=1, bb = 2 }\n}\n",
			want: "phase \"a\" {\n  command = \"true\"\n  outputs = [\"x\"]\n  params  = { a = 1, bb = 2 }\n}\n",
		},
		{
			name: "aligned comments, blank line ends a run",
			in:   "a = 1 # one\nbbbb = [1,2] # two\n\nc = 3   # three\n",
			want: "a    = 1      # one\nbbbb = [1, 2] # two\n\nc = 3 # three\n",
		},
		{
			name: "heredoc text untouched, its interpolation spaced",
			in:   "x {\na = <<EOT\n  keep   ${ b+1 }\nEOT\n}\n",
			want: "x {\n  a = <<EOT\n  keep   ${b + 1}\nEOT\n}\n",
		},
		{
			name: "operators, unary minus and bang, calls",
			in:   "a = f( -1,x -1 , !b )[0]\n",
			want: "a = f(-1, x - 1, !b)[0]\n",
		},
		{
			name: "crlf kept",
			in:   "a=1\r\nbb=2\r\n",
			want: "a  = 1\r\nbb = 2\r\n",
		},
		{
			name: "grapheme clusters are one column",
			in:   "m = {\n\"e\u0301\" = 1\nab = 2\n}\n",
			want: "m = {\n  \"e\u0301\" = 1\n  ab  = 2\n}\n",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Format([]byte(c.in)); string(got) != c.want {
				t.Errorf("Format(%q) (-want +got):\n%s", c.in, lineDiff([]byte(c.want), got))
			}
		})
	}
}

// TestFormatKeepsTokens: where the layout would change a token, Format
// returns its input as it is. hclwrite's layout does that to legacy index
// steps after a number ("1 .5" would become the number 1.5), and a faulty
// layout that drops every blank joins names ("forxiny").
func TestFormatKeepsTokens(t *testing.T) {
	for _, src := range []string{"a = 1 .5\n", "a = b.0 .1\n", "a = [ 1 .5 ]\n"} {
		t.Run(src, func(t *testing.T) {
			if !parses([]byte(src)) {
				t.Fatalf("does not parse: %q", src)
			}
			hw := hclwrite.Format([]byte(src))
			if cmp.Equal(lexed([]byte(src)), lexed(hw)) {
				t.Fatalf("hclwrite.Format(%q) = %q keeps the tokens: not a fallback case", src, hw)
			}
			if got := Format([]byte(src)); string(got) != src {
				t.Errorf("Format(%q) = %q, want its input unchanged", src, got)
			}
			checkFormat(t, []byte(src))
		})
	}

	if sameTokens(mustLex(t, []byte("a = x\n")), []byte("a = y\n")) {
		t.Error("sameTokens: \"a = x\" and \"a = y\" have the same tokens")
	}
	if !sameTokens(mustLex(t, []byte("a = x\n")), []byte("a   =x\n")) {
		t.Error("sameTokens: \"a = x\" and \"a   =x\" have different tokens")
	}

	joined := func(toks hclsyntax.Tokens) []byte {
		var b []byte
		for _, t := range toks {
			b = append(b, t.Bytes...)
		}
		return b
	}
	src := []byte("a = [for x in y : x]\n")
	if got := string(joined(mustLex(t, src))); got != "a=[forxiny:x]\n" {
		t.Fatalf("faulty layout gave %q", got)
	}
	if got := formatChecked(src, joined); !bytes.Equal(got, src) {
		t.Errorf("formatChecked with a layout that joins names = %q, want its input %q", got, src)
	}
}

func mustLex(t *testing.T, src []byte) hclsyntax.Tokens {
	t.Helper()
	toks, diags := hclsyntax.LexConfig(src, "", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return toks
}

// FuzzFormat: for any input that parses, and for a respaced variant of
// it, Format gives hclwrite.Format's result (or its input, where hclwrite
// changes tokens), keeps the tokens and is idempotent; for any input at
// all, it does not panic and keeps the tokens.
func FuzzFormat(f *testing.F) {
	// Large seeds (long tokens, generated specs) only slow the fuzzer
	// down; the tests above run them.
	for _, c := range formatCases {
		if len(c.src) <= 8<<10 {
			f.Add([]byte(c.src))
		}
	}
	for _, c := range formatCorpus(f) {
		if len(c.src) <= 8<<10 {
			f.Add(c.src)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if parses(src) {
			checkFormat(t, src)
			// And one respaced variant, drawn from src itself so that a
			// failure replays.
			h := fnv.New64a()
			h.Write(src)
			v := respace(rand.New(rand.NewPCG(h.Sum64(), 0)), mustLex(t, src))
			if parses(v) {
				checkFormat(t, v)
			}
			return
		}
		got := Format(src)
		if diff := cmp.Diff(lexed(src), lexed(got)); diff != "" {
			t.Fatalf("Format(%q) changed tokens (-in +out):\n%s", src, diff)
		}
	})
}

var (
	benchOnce sync.Once
	benchSrc  []byte
	benchErr  error
)

// benchFormatSpec is bench/gen's layered workload of 1,000 phases.
func benchFormatSpec(b *testing.B) []byte {
	benchOnce.Do(func() { benchSrc, benchErr = genSpec(b.TempDir(), "-n", "1000", "-no-inputs") })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchSrc
}

// BenchmarkFormat formats a spec of 1,000 phases; compare with
// BenchmarkFormatHCLWrite.
func BenchmarkFormat(b *testing.B) {
	src := benchFormatSpec(b)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		Format(src)
	}
}

// BenchmarkFormatHCLWrite is hclwrite.Format on BenchmarkFormat's input.
func BenchmarkFormatHCLWrite(b *testing.B) {
	src := benchFormatSpec(b)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		hclwrite.Format(src)
	}
}
