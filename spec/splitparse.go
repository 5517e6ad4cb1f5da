package spec

import (
	"bytes"
	"sync"

	"github.com/cairn-run/cairn/internal/cores"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Parsing a large spec is most of a first run's start: HCL lexes and
// parses it on one core, before any phase can start. A spec is a sequence of top-level
// blocks, each parsed on its own, so parseSplit cuts the source between
// top-level blocks and parses the pieces side by side, then joins their
// blocks into one body. The result is the file the whole-source parse
// gives (TestParseSplitMatchesWhole, FuzzParseSplit); whenever that is not
// certain (a piece with any diagnostic, an attribute in two pieces) it
// declines and the whole source is parsed, so errors are always the
// whole parse's.

// splitMin is the source size below which splitting is not worth it.
var splitMin = 64 << 10 // a variable: tests split small sources

// parseSplit parses src, a spec file named filename, as hclsyntax.ParseConfig
// does from its start, or declines (false).
func parseSplit(src []byte, filename string) (*hcl.File, hcl.Diagnostics, bool) {
	cuts := splitPoints(src, cores.N)
	if len(cuts) == 0 {
		return nil, nil, false
	}
	return parsePieces(src, filename, cuts)
}

// parsePieces parses src cut at cuts (increasing offsets inside src, each
// the start of a line), the pieces side by side, and joins them, or
// declines if they do not join.
func parsePieces(src []byte, filename string, cuts []int) (*hcl.File, hcl.Diagnostics, bool) {
	bounds := append(append([]int{0}, cuts...), len(src))
	files := make([]*hcl.File, len(bounds)-1)
	diags := make([]hcl.Diagnostics, len(bounds)-1)
	var wg sync.WaitGroup
	for i := range files {
		lo, hi := bounds[i], bounds[i+1]
		pos := hcl.Pos{Line: 1 + bytes.Count(src[:lo], []byte("\n")), Column: 1, Byte: lo}
		wg.Go(func() {
			// Each piece is a view of src, so every range and the
			// bytes it keeps are the whole source's.
			files[i], diags[i] = hclsyntax.ParseConfig(src[lo:hi:hi], filename, pos)
		})
	}
	wg.Wait()
	if f, ok := joinPieces(files, diags, src); ok {
		return f, nil, true
	}
	return nil, nil, false
}

// joinPieces appends the blocks and attributes of every piece's body to
// the first one's (whose file also navigates the whole body for
// diagnostics' context), or reports false if a piece had a diagnostic or
// two pieces set the same attribute.
func joinPieces(files []*hcl.File, diags []hcl.Diagnostics, src []byte) (*hcl.File, bool) {
	for i := range files {
		if len(diags[i]) > 0 || files[i] == nil {
			return nil, false
		}
		if _, ok := files[i].Body.(*hclsyntax.Body); !ok {
			return nil, false
		}
	}
	first := files[0].Body.(*hclsyntax.Body)
	for _, f := range files[1:] {
		b := f.Body.(*hclsyntax.Body)
		for name, a := range b.Attributes {
			if _, dup := first.Attributes[name]; dup {
				return nil, false // the whole parse reports it
			}
			first.Attributes[name] = a
		}
		first.Blocks = append(first.Blocks, b.Blocks...)
		first.SrcRange.End = b.SrcRange.End
		first.EndRange = b.EndRange
	}
	files[0].Bytes = src
	return files[0], true
}

// splitPoints returns up to n-1 offsets, in order, at which src can be
// cut between top-level blocks, each near an equal share of src: the
// start of a line beginning with a letter, after a line that is only "}"
// (and blank lines), which is how every formatted spec closes a
// top-level block. A
// wrong guess (the "}" closes a nested block written at column 0, or lies
// in a heredoc) leaves a piece that does not parse cleanly, and then the
// whole source is parsed.
func splitPoints(src []byte, n int) []int {
	if n < 2 || len(src) < splitMin {
		return nil
	}
	n = min(n, len(src)/(splitMin/2))
	var cuts []int
	for k := 1; k < n; k++ {
		from := k * len(src) / n
		if len(cuts) > 0 {
			from = max(from, cuts[len(cuts)-1]+1)
		}
		c := nextBlockStart(src, from)
		if c < 0 || c >= len(src) {
			break
		}
		cuts = append(cuts, c)
	}
	return cuts
}

// nextBlockStart returns the first offset at or after from that starts a
// line beginning with a letter whose last non-blank line before it holds
// only "}" (and trailing blanks), or -1.
func nextBlockStart(src []byte, from int) int {
	for i := from; i < len(src); {
		nl := bytes.IndexByte(src[i:], '\n')
		if nl < 0 {
			return -1
		}
		i += nl + 1 // the start of the next line
		if i >= len(src) || !isLetter(src[i]) {
			continue
		}
		if prevLine(src[:i-1]) == "}" {
			return i
		}
	}
	return -1
}

// prevLine returns the last line of b that is not blank, without its
// trailing blanks ("" if there is none).
func prevLine(b []byte) string {
	for len(b) > 0 {
		line := b
		if j := bytes.LastIndexByte(b, '\n'); j >= 0 {
			line, b = b[j+1:], b[:j]
		} else {
			b = nil
		}
		if t := bytes.TrimRight(line, " \t\r"); len(t) > 0 {
			return string(t)
		}
	}
	return ""
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
