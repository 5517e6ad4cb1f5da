// Package hclfmt lays out HCL source in the canonical style of `cairn
// fmt` (hclwrite's), without linking hclwrite.
package hclfmt

import (
	"bytes"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Format returns src laid out in the canonical HCL style, the layout of
// `cairn fmt` and of `terraform fmt`: two spaces of indentation per level
// of bracket nesting, one space between most tokens and none inside
// brackets or around dots, the "=" of consecutive attribute lines aligned
// in one column and so are their trailing comments. Comments, blank lines,
// heredocs and the literal parts of templates are kept as they are.
//
// Its output is byte for byte what hclwrite.Format gives for any src that
// parses; cairn has its own formatter only so that the binary does not
// link hclwrite (and through it go-cmp, whose init costs every
// invocation). Only the blanks between tokens change: Format re-lexes its
// result and, should any token differ from src's, returns src itself
// rather than a damaged file. That happens where hclwrite's layout joins
// a number and a legacy index step ("1 .5" would become the number 1.5,
// "a.0 .1" the invalid "a.0.1"); hclwrite returns the changed text there.
// Source that does not parse is laid out by the same rules, token by
// token, but the result may not be pretty.
func Format(src []byte) []byte {
	return formatChecked(src, layout)
}

// formatChecked lays out src's tokens with lay and returns the result if
// it holds the same tokens as src, and src otherwise. lay is a parameter
// so that tests can feed it a faulty layout and see the fallback taken.
func formatChecked(src []byte, lay func(hclsyntax.Tokens) []byte) []byte {
	toks, _ := hclsyntax.LexConfig(src, "", hcl.InitialPos)
	out := lay(toks)
	if !sameTokens(toks, out) {
		return src
	}
	return out
}

// sameTokens reports whether src lexes to exactly toks: the same types
// and bytes, in the same order. Blanks between tokens are not tokens, so
// they may differ.
func sameTokens(toks hclsyntax.Tokens, src []byte) bool {
	got, _ := hclsyntax.LexConfig(src, "", hcl.InitialPos)
	if len(got) != len(toks) {
		return false
	}
	for i := range got {
		if got[i].Type != toks[i].Type || !bytes.Equal(got[i].Bytes, toks[i].Bytes) {
			return false
		}
	}
	return true
}

// A line is the tokens of one source line, toks[start:end], cut into up
// to three cells whose first tokens are moved to align with the lines
// around it:
//
//	name    = value # comment
//	^lead   ^value  ^comment
//
// The lead always starts the line (toks[start:value]). The value cell
// (toks[value:comment]) starts at the line's first "=" when what follows
// it closes every bracket it opens, that is when the line holds a whole
// attribute. The comment cell (toks[comment:end]) is a comment ending a
// line that has something else before it. An absent cell is empty:
// value == comment, comment == end.
//
// A line ends with its newline token or with a "#" or "//" comment, which
// holds its newline. So a heredoc, whose body is literal tokens, belongs
// to the line it starts on, with the rest of the attribute it is in.
type line struct {
	start, value, comment, end int
}

func (l line) hasValue() bool   { return l.value < l.comment }
func (l line) hasComment() bool { return l.comment < l.end }

// layout returns toks written out in the canonical layout. It decides the
// number of spaces before every token, in three passes (indentation, the
// spacing inside cells, then the alignment of cells across lines), then
// writes each token after its spaces.
func layout(toks hclsyntax.Tokens) []byte {
	spaces := make([]int, len(toks))
	lines := splitLines(toks)
	indent(toks, lines, spaces)
	for _, l := range lines {
		spaceCell(toks[l.start:l.value], spaces[l.start:l.value])
		spaceCell(toks[l.value:l.comment], spaces[l.value:l.comment])
	}
	align(toks, lines, spaces)

	// The end-of-file token is on no line: blanks after the last token of
	// a file without a final newline stay (as spaces; they can be tabs).
	if n := len(toks); n > 0 && toks[n-1].Type == hclsyntax.TokenEOF {
		prevEnd := 0
		if n > 1 {
			prevEnd = toks[n-2].Range.End.Byte
		}
		spaces[n-1] = toks[n-1].Range.Start.Byte - prevEnd
	}

	size := 0
	for i, t := range toks {
		size += spaces[i] + len(t.Bytes)
	}
	out := make([]byte, 0, size)
	for i, t := range toks {
		for range spaces[i] {
			out = append(out, ' ')
		}
		out = append(out, t.Bytes...)
	}
	return out
}

// splitLines cuts toks into lines and finds each line's cells.
func splitLines(toks hclsyntax.Tokens) []line {
	var lines []line
	start := 0
	for i, t := range toks {
		switch {
		case t.Type == hclsyntax.TokenEOF:
			if start < i {
				lines = append(lines, cells(toks, start, i))
			}
			return lines
		case endsLine(t):
			lines = append(lines, cells(toks, start, i+1))
			start = i + 1
		}
	}
	return lines // not reached: the lexer's tokens end with an EOF
}

// endsLine reports whether t is the last token of its line: a newline, or
// a single-line comment, which takes its newline with it.
func endsLine(t hclsyntax.Token) bool {
	switch t.Type {
	case hclsyntax.TokenNewline:
		return true
	case hclsyntax.TokenComment:
		return len(t.Bytes) > 0 && t.Bytes[len(t.Bytes)-1] == '\n'
	}
	return false
}

// cells splits the line toks[start:end] into its lead, value and comment.
func cells(toks hclsyntax.Tokens, start, end int) line {
	l := line{start: start, value: end, comment: end, end: end}
	if end-start > 1 && toks[end-1].Type == hclsyntax.TokenComment {
		l.comment = end - 1
		l.value = end - 1
	}
	// Only the first "=" counts, and only if it does not open a
	// multi-line expression such as "x = [" or "x = {".
	for i := start + 1; i < l.comment; i++ {
		if toks[i].Type != hclsyntax.TokenEqual {
			continue
		}
		if nesting(toks[i:l.comment]) == 0 {
			l.value = i
		}
		break
	}
	return l
}

// nesting is the net number of brackets toks opens (negative: closes).
func nesting(toks hclsyntax.Tokens) int {
	n := 0
	for _, t := range toks {
		n += bracket(t.Type)
	}
	return n
}

// bracket is +1 for a token that opens a nesting level, -1 for one that
// closes it and 0 otherwise. The "${" and "%{" of templates open a level
// that their "}" closes.
func bracket(ty hclsyntax.TokenType) int {
	switch ty {
	case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
		hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
		return 1
	case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
		hclsyntax.TokenTemplateSeqEnd:
		return -1
	}
	return 0
}

// indent sets the spaces before each line's first token: two per open
// level, blank lines none.
//
// Levels are counted by line, not by bracket: a line that opens brackets
// indents the lines after it by one level however many it opens, and
// remembers how many; lines that close brackets give back a level each
// time they close all of a remembered count. So "foo({" opens one level
// and "})" closes it, and unbalanced input cannot drift far.
//
// A line's count stops at a heredoc's opening "<<EOT": its body is text.
// The value cell never counts, as it is balanced by definition.
func indent(toks hclsyntax.Tokens, lines []line, spaces []int) {
	var open []int // per indentation level, the brackets it stands for
	for _, l := range lines {
		if toks[l.start].Type == hclsyntax.TokenNewline {
			spaces[l.start] = 0
			continue
		}
		net := 0
		for _, t := range toks[l.start:l.value] {
			if t.Type == hclsyntax.TokenOHeredoc {
				break
			}
			net += bracket(t.Type)
		}
		if net > 0 {
			spaces[l.start] = 2 * len(open)
			open = append(open, net)
			continue
		}
		for closed := -net; closed > 0 && len(open) > 0; {
			top := &open[len(open)-1]
			if closed < *top {
				*top -= closed
				break
			}
			closed -= *top
			open = open[:len(open)-1]
		}
		spaces[l.start] = 2 * len(open)
	}
}

// spaceCell sets the spaces before every token of a cell but its first,
// by looking at the token before each and the one before that.
func spaceCell(toks hclsyntax.Tokens, spaces []int) {
	for i := 1; i < len(toks); i++ {
		var before *hclsyntax.Token
		if i >= 2 {
			before = &toks[i-2]
		}
		spaces[i] = 0
		if spaceBetween(before, toks[i-1], toks[i]) {
			spaces[i] = 1
		}
	}
}

// spaceBetween reports whether one space goes between the adjacent tokens
// a and b, where before is the token before a in its cell, nil if a is
// the cell's first. The rules are tried in order; the first that applies
// decides.
func spaceBetween(before *hclsyntax.Token, a, b hclsyntax.Token) bool {
	switch {
	// Never a blank at the end of a line.
	case b.Type == hclsyntax.TokenNewline:
		return false

	// Calls and names stay together: f(x), provider::f, a.b.
	case a.Type == hclsyntax.TokenIdent && b.Type == hclsyntax.TokenOParen:
		return false
	case a.Type == hclsyntax.TokenIdent && b.Type == hclsyntax.TokenDoubleColon,
		a.Type == hclsyntax.TokenDoubleColon && b.Type == hclsyntax.TokenIdent:
		return false
	case a.Type == hclsyntax.TokenDot || b.Type == hclsyntax.TokenDot:
		return false

	// Lists: f(a, b), f(args...).
	case b.Type == hclsyntax.TokenComma || b.Type == hclsyntax.TokenEllipsis:
		return false
	case a.Type == hclsyntax.TokenComma:
		return true

	// The text of a template is left as written: nothing is added at
	// either end of a literal or inside the quotes and heredoc markers.
	case opensText(a.Type) || isText(a.Type) || isText(b.Type) || closesText(b.Type):
		return false

	// "for x in [a, b]": "in" is the keyword here, not a name being
	// indexed, so it is not joined to the bracket by the next rule.
	case before != nil && before.Type == hclsyntax.TokenIdent &&
		a.Type == hclsyntax.TokenIdent && string(a.Bytes) == "in":
		return true

	// Indexing: a[0], 1[0], f(x)[0], {...}[k].
	case b.Type == hclsyntax.TokenOBrack &&
		(a.Type == hclsyntax.TokenIdent || a.Type == hclsyntax.TokenNumberLit || bracket(a.Type) < 0):
		return false

	// Unary operators: !a, -a.
	case a.Type == hclsyntax.TokenBang:
		return false
	case a.Type == hclsyntax.TokenMinus:
		return !negates(before)

	// Braces keep a space inside them, "{ a = 1 }", but not when empty:
	// "{}".
	case a.Type == hclsyntax.TokenOBrace || b.Type == hclsyntax.TokenCBrace:
		return !(a.Type == hclsyntax.TokenOBrace && b.Type == hclsyntax.TokenCBrace)

	// An object constructor alone in an interpolation, "${ {a = 1} }",
	// is set apart from the template's own braces.
	case (a.Type == hclsyntax.TokenTemplateInterp || a.Type == hclsyntax.TokenTemplateControl) &&
		b.Type == hclsyntax.TokenOBrace:
		return true
	case a.Type == hclsyntax.TokenCBrace && b.Type == hclsyntax.TokenTemplateSeqEnd:
		return true

	// Consecutive interpolations stay joined: "${a}${b}".
	case a.Type == hclsyntax.TokenTemplateSeqEnd &&
		(b.Type == hclsyntax.TokenTemplateInterp || b.Type == hclsyntax.TokenTemplateControl):
		return false

	// No space just inside brackets: [a], (a), "${a}".
	case bracket(a.Type) > 0 || bracket(b.Type) < 0:
		return false
	}
	// Everything else is separated by one space: operators, "=", ":",
	// "?", "=>", keywords, comments.
	return true
}

// negates reports whether a "-" after before is a negation, which takes
// no space after it, rather than a subtraction. It is a negation at the
// start of a cell and after anything that cannot end an operand: an
// opening bracket, a separator or another operator.
func negates(before *hclsyntax.Token) bool {
	if before == nil {
		return true
	}
	switch before.Type {
	case hclsyntax.TokenOParen, hclsyntax.TokenOBrace, hclsyntax.TokenOBrack,
		hclsyntax.TokenEqual, hclsyntax.TokenColon, hclsyntax.TokenComma, hclsyntax.TokenQuestion,
		hclsyntax.TokenPlus, hclsyntax.TokenMinus, hclsyntax.TokenStar, hclsyntax.TokenSlash, hclsyntax.TokenPercent,
		hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual,
		hclsyntax.TokenGreaterThan, hclsyntax.TokenGreaterThanEq, hclsyntax.TokenLessThan, hclsyntax.TokenLessThanEq,
		hclsyntax.TokenAnd, hclsyntax.TokenOr, hclsyntax.TokenBang:
		return true
	}
	return false
}

// opensText reports whether ty opens a template's text: a quote or a
// heredoc's "<<EOT" line.
func opensText(ty hclsyntax.TokenType) bool {
	return ty == hclsyntax.TokenOQuote || ty == hclsyntax.TokenOHeredoc
}

// closesText reports whether ty closes a template's text.
func closesText(ty hclsyntax.TokenType) bool {
	return ty == hclsyntax.TokenCQuote || ty == hclsyntax.TokenCHeredoc
}

// isText reports whether ty is literal text of a template.
func isText(ty hclsyntax.TokenType) bool {
	return ty == hclsyntax.TokenQuotedLit || ty == hclsyntax.TokenStringLit
}

// align moves the value and comment cells of runs of consecutive lines
// into one column each: every "=" of a run goes one space after its
// longest lead, then every trailing comment one space after its longest
// lead and value. A line without the cell ends the run.
func align(toks hclsyntax.Tokens, lines []line, spaces []int) {
	alignRuns(lines, line.hasValue, func(l line) (int, int) {
		return l.value, width(toks[l.start:l.value], spaces[l.start:l.value])
	}, spaces)
	alignRuns(lines, line.hasComment, func(l line) (int, int) {
		return l.comment, width(toks[l.start:l.comment], spaces[l.start:l.comment])
	}, spaces)
}

// alignRuns aligns one kind of cell over every run of consecutive lines
// that have it: cell gives the index of a line's cell token and the width
// of what comes before it on the line.
func alignRuns(lines []line, has func(line) bool, cell func(line) (tok, before int), spaces []int) {
	for i := 0; i < len(lines); {
		if !has(lines[i]) {
			i++
			continue
		}
		j := i
		column := 0
		for ; j < len(lines) && has(lines[j]); j++ {
			_, w := cell(lines[j])
			column = max(column, w)
		}
		for _, l := range lines[i:j] {
			tok, w := cell(l)
			spaces[tok] = column - w + 1
		}
		i = j
	}
}
