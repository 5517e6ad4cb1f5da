package hclfmt

import (
	"bytes"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// This file measures tokens for Format's alignment, in columns counted
// exactly as hclwrite counts them, quirks included.

// width is the number of columns toks takes with the given spaces before
// each: a space is one column, and so is a token's every grapheme cluster
// (a character as the reader sees it, accents and all). A newline inside
// a token (heredoc text, a block comment) counts as one, like hclwrite.
func width(toks hclsyntax.Tokens, spaces []int) int {
	w := 0
	for i, t := range toks {
		w += spaces[i] + graphemes(t)
	}
	return w
}

// graphemes counts the grapheme clusters in t's bytes the way hclwrite
// does: with a bufio.Scanner, whose buffer holds 4 KB at first and whose
// splitter takes the buffer's end for the end of the text. So in a token
// longer than that, a character cut by the buffer's end counts as two ("e"
// and its accent), and the count stops at a lone line break followed by
// 64 KB or more (the splitter wants all the rest in the buffer then).
// Shorter tokens get the true count.
//
// The lexer already made the true count for t's columns, with the Unicode
// tables hclwrite uses: a short token on one line spans
// End.Column-Start.Column clusters, and a short ASCII one has one per byte
// but "\r\n". Other tokens are counted by hcl's range scanner, which scans
// with the very same bufio.Scanner and splitter as hclwrite: see hclCount.
func graphemes(t hclsyntax.Token) int {
	b := t.Bytes
	if len(b) <= 4096 {
		if bytes.IndexByte(b, '\n') < 0 {
			return t.Range.End.Column - t.Range.Start.Column
		}
		if isASCII(b) {
			return len(b) - bytes.Count(b, []byte("\r\n"))
		}
	}
	return hclCount(b)
}

// hclCount counts b's grapheme clusters with hcl's range scanner: one
// token's end column less its start column. That scanner starts a new
// line (column 1) at a cluster beginning with "\r" or "\n", so those are
// first swapped for stand-ins of the same length that the splitter treats
// alike, so that the scanner reads and buffers the text as it would b:
// "\r\n" for U+0085, a control character of two bytes that is one
// cluster, and whose first byte alone at the buffer's end asks for more
// text as a lone "\r" does; a lone "\r" or "\n" for 0xFF, an invalid
// byte, as the splitter finds no cluster at either, asks for all the text
// and then takes one byte.
func hclCount(b []byte) int {
	if bytes.ContainsAny(b, "\r\n") {
		c := make([]byte, len(b))
		for i := 0; i < len(b); i++ {
			switch {
			case b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n':
				c[i], c[i+1] = 0xC2, 0x85
				i++
			case b[i] == '\r' || b[i] == '\n':
				c[i] = 0xFF
			default:
				c[i] = b[i]
			}
		}
		b = c
	}
	sc := hcl.NewRangeScanner(b, "", func(data []byte, _ bool) (int, []byte, error) {
		return len(data), data, nil
	})
	if !sc.Scan() {
		return 0
	}
	r := sc.Range()
	return r.End.Column - r.Start.Column
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
