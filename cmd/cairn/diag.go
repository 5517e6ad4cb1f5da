package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// diagWriter renders spec diagnostics the way compilers do: a
// file:line:col header, the source line, and the range underlined, with an
// optional colour.
type diagWriter struct {
	w     io.Writer
	files map[string]*hcl.File
	color bool
}

const (
	ansiReset = "\x1b[0m"
	ansiBold  = "\x1b[1m"
	ansiRed   = "\x1b[31m"
	ansiYell  = "\x1b[33m"
	ansiCyan  = "\x1b[36m"
)

func (dw *diagWriter) paint(code, s string) string {
	if !dw.color {
		return s
	}
	return code + s + ansiReset
}

func (dw *diagWriter) write(diags hcl.Diagnostics) {
	for i, d := range diags {
		if i > 0 {
			fmt.Fprintln(dw.w)
		}
		dw.writeOne(d)
	}
	errs, warns := 0, 0
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs++
		} else {
			warns++
		}
	}
	if errs > 1 {
		fmt.Fprintf(dw.w, "\n%d errors\n", errs)
	}
}

func (dw *diagWriter) writeOne(d *hcl.Diagnostic) {
	sev, code := "error", ansiRed
	if d.Severity == hcl.DiagWarning {
		sev, code = "warning", ansiYell
	}
	where := ""
	if d.Subject != nil {
		where = fmt.Sprintf("%s:%d:%d: ", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
	}
	fmt.Fprintf(dw.w, "%s%s %s\n", dw.paint(ansiBold, where), dw.paint(ansiBold+code, sev+":"), dw.paint(ansiBold, d.Summary))
	if d.Subject != nil {
		dw.writeSnippet(d.Subject)
	}
	if d.Detail != "" {
		for _, line := range strings.Split(d.Detail, "\n") {
			fmt.Fprintf(dw.w, "  %s\n", line)
		}
	}
}

// writeSnippet prints the subject's first line with a gutter and a caret
// line underneath the range.
func (dw *diagWriter) writeSnippet(rng *hcl.Range) {
	f := dw.files[rng.Filename]
	if f == nil {
		return
	}
	lines := bytes.Split(f.Bytes, []byte("\n"))
	n := rng.Start.Line
	if n < 1 || n > len(lines) {
		return
	}
	line := string(bytes.TrimRight(lines[n-1], "\r"))
	gutter := fmt.Sprintf("%5d | ", n)
	fmt.Fprintf(dw.w, "%s%s\n", dw.paint(ansiCyan, gutter), line)

	// Columns are counted in characters; keep tabs so the carets line up.
	startByte := rng.Start.Byte - lineStartByte(f.Bytes, n)
	if startByte < 0 || startByte > len(line) {
		return
	}
	endByte := len(line)
	if rng.End.Line == n {
		endByte = rng.End.Byte - lineStartByte(f.Bytes, n)
	}
	if endByte > len(line) {
		endByte = len(line)
	}
	var pad strings.Builder
	for _, r := range line[:startByte] {
		if r == '\t' {
			pad.WriteRune('\t')
		} else {
			pad.WriteRune(' ')
		}
	}
	width := utf8.RuneCountInString(line[startByte:max(startByte, endByte)])
	if width < 1 {
		width = 1
	}
	fmt.Fprintf(dw.w, "%s%s%s\n", dw.paint(ansiCyan, strings.Repeat(" ", len(gutter)-2)+"| "), pad.String(), dw.paint(ansiRed, strings.Repeat("^", width)))
}

// lineStartByte is the byte offset where line n (1-based) starts.
func lineStartByte(src []byte, n int) int {
	off := 0
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(src[off:], '\n')
		if j < 0 {
			return len(src)
		}
		off += j + 1
	}
	return off
}
