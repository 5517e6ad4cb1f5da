package report

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

const (
	// tailLines is how many of a log's last lines the page shows.
	tailLines = 40
	// tailBytes is how much of a log's end is read for them, so a huge
	// log costs no more than a small one (and a single huge line is cut).
	tailBytes = 64 << 10
)

// logTail is the end of one log, as the page shows it.
type logTail struct {
	Stream string // "stdout" or "stderr"
	Text   string
	Lines  int  // lines in Text
	Cut    bool // earlier lines were left out
	Note   string
}

// tailOf returns the last n lines of b and whether earlier ones were left
// out. A final newline does not count as an empty last line.
func tailOf(b []byte, n int) (string, bool) {
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) == 0 {
		return "", false
	}
	end := len(b)
	for range n {
		i := bytes.LastIndexByte(b[:end], '\n')
		if i < 0 {
			return string(b), false
		}
		end = i
	}
	return string(b[end+1:]), true
}

// readTail reads at most tailBytes from the end of the file at path and
// returns its last tailLines lines; cut is set when anything before them
// was left out.
func readTail(path string) (text string, cut bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	off := max(fi.Size()-tailBytes, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return "", false, err
	}
	if off > 0 {
		// Drop the partial first line, unless it is all there is.
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	text, cut = tailOf(b, tailLines)
	return text, cut || off > 0, nil
}

// phaseLogs returns the tails of a phase's stdout and stderr: from the
// run's log files under root when the phase ran, else from cached (the
// logs of the run that produced a cached result), else the stderr tail
// kept in the record. Problems reading become notes, never errors: a
// missing log must not stop the report.
func phaseLogs(root string, ps *phaseView, cached func() (stdout, stderr []byte, err error)) []logTail {
	st := ps.state
	var out []logTail
	if st.Stdout != "" || st.Stderr != "" {
		for _, l := range []struct{ stream, rel string }{{"stdout", st.Stdout}, {"stderr", st.Stderr}} {
			if l.rel == "" {
				continue
			}
			t := logTail{Stream: l.stream}
			if !filepath.IsLocal(filepath.FromSlash(l.rel)) {
				t.Note = fmt.Sprintf("not read: the log path %q is outside the workspace", l.rel)
			} else if text, cut, err := readTail(filepath.Join(root, filepath.FromSlash(l.rel))); err != nil {
				t.Note = "not readable: " + err.Error()
				if l.stream == "stderr" && st.LogTail != "" {
					t.Text, t.Cut = tailOf([]byte(st.LogTail), tailLines)
					t.Note += "; the tail kept in the run record follows"
				}
			} else {
				t.Text, t.Cut = text, cut
			}
			out = append(out, t)
		}
		return trimEmpty(out)
	}
	if cached != nil {
		so, se, err := cached()
		if err == nil {
			for _, l := range []struct {
				stream string
				b      []byte
			}{{"stdout", so}, {"stderr", se}} {
				t := logTail{Stream: l.stream, Note: "from the run that produced the cached result"}
				t.Text, t.Cut = tailOf(l.b, tailLines)
				out = append(out, t)
			}
			return trimEmpty(out)
		}
	}
	if st.LogTail != "" {
		t := logTail{Stream: "stderr", Note: "the tail kept in the run record"}
		t.Text, t.Cut = tailOf([]byte(st.LogTail), tailLines)
		return trimEmpty([]logTail{t})
	}
	return nil
}

// trimEmpty drops empty logs without a note and counts the lines of the
// others.
func trimEmpty(ls []logTail) []logTail {
	var out []logTail
	for _, l := range ls {
		if l.Text == "" && l.Note == "" {
			continue
		}
		if l.Text != "" {
			l.Lines = strings.Count(l.Text, "\n") + 1
		}
		out = append(out, l)
	}
	return out
}
