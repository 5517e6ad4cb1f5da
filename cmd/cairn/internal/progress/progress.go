// Package progress shows a run while it runs: plain lines for pipes and
// logs, JSON lines for machines, or a live display on a terminal that ends
// with a summary table. A view is an engine.Reporter the engine calls from
// its goroutines; the closing line and the formats of durations and
// spending are shared with the rest of the command line's output.
//
// It belongs to the command line, not to the engine: it imports engine's
// event types and is imported only by cmd/cairn (the internal directory
// makes that a rule the compiler keeps), so the engine never depends on
// how a run is shown.
package progress

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/internal/fsx"
	"github.com/cairn-run/cairn/runrec"
)

// Options choose the view.
type Options struct {
	JSON  bool // JSON lines, one event per line
	Quiet bool // only errors, warnings and the closing line
	// Verbose adds to the closing line how many input and output files
	// were read to hash them, and their bytes.
	Verbose bool
}

// View shows one run's progress: plain lines, JSON lines or a live
// terminal display. Report is called from the engine's goroutines.
type View interface {
	engine.Reporter
	// PhaseOutput returns the writers a phase's output is copied to
	// with -v (engine.RunOptions.PhaseOutput).
	PhaseOutput(phase string) (stdout, stderr io.WriteCloser)
	// Above wraps w (stderr) so that what is written to it while the
	// view is live appears above the live display, not through it.
	Above(w io.Writer) io.Writer
	// Close ends the view; with res (nil when the run did not start) it
	// prints the run's summary and closing line.
	Close(res *engine.RunResult)
}

// New picks the view for out: JSON with o.JSON, the live display on a
// terminal (unless o.Quiet or TERM=dumb), plain lines otherwise.
func New(out io.Writer, o Options) View {
	if o.JSON {
		return newJSONView(out)
	}
	if f, ok := out.(*os.File); ok && !o.Quiet && isTerminal(f) {
		v := newTermView(f, os.Getenv("NO_COLOR") == "")
		v.verbose = o.Verbose
		return v
	}
	v := newPlainView(out, o.Quiet)
	v.verbose = o.Verbose
	return v
}

func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) && os.Getenv("TERM") != "dumb"
}

// plainView prints one line per event: for pipes, logs and CI. The lines
// of phases found cached or restored are written in batches (a no-op run
// of 1,000 phases would otherwise make 1,000 writes); every other line
// goes out at once, with what was batched before it, and a batch never
// waits longer than plainBatchDelay.
type plainView struct {
	mu      sync.Mutex
	w       *bufio.Writer
	quiet   bool
	verbose bool // the closing line says what was hashed
	spend   spendTracker
	timer   *time.Timer // pending flush of a batch, if any
}

const plainBatchDelay = 100 * time.Millisecond

var _ View = (*plainView)(nil)

func newPlainView(out io.Writer, quiet bool) *plainView {
	return &plainView{w: bufio.NewWriter(out), quiet: quiet, spend: spendTracker{}}
}

func (v *plainView) Report(ev engine.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.spend.fill(&ev)
	if v.quiet && !alarming(ev) {
		return
	}
	line, ok := eventLine(ev)
	if !ok {
		return
	}
	v.w.WriteString(line)
	v.w.WriteByte('\n')
	if ev.Kind == engine.EventDone && (ev.Status == runrec.StatusCached || ev.Status == runrec.StatusRestored) {
		if v.timer == nil {
			v.timer = time.AfterFunc(plainBatchDelay, func() {
				v.mu.Lock()
				defer v.mu.Unlock()
				v.flushLocked()
			})
		}
		return
	}
	v.flushLocked()
}

func (v *plainView) flushLocked() {
	if v.timer != nil {
		v.timer.Stop()
		v.timer = nil
	}
	v.w.Flush()
}

func (v *plainView) PhaseOutput(phase string) (io.WriteCloser, io.WriteCloser) {
	emit := func(line string) {
		v.mu.Lock()
		v.w.WriteString(line)
		v.w.WriteByte('\n')
		v.flushLocked()
		v.mu.Unlock()
	}
	return newPrefixWriter("["+phase+"] ", emit), newPrefixWriter("["+phase+"] ", emit)
}

func (v *plainView) Above(w io.Writer) io.Writer { return w }

func (v *plainView) Close(res *engine.RunResult) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if res != nil {
		fmt.Fprintln(v.w, summaryLine(res, v.verbose))
	}
	v.flushLocked()
}

// alarming reports whether -q still prints ev: warnings and phases that
// failed.
func alarming(ev engine.Event) bool {
	switch ev.Kind {
	case engine.EventWarning:
		return true
	case engine.EventDone:
		return failedStatus(ev.Status)
	}
	return false
}

func failedStatus(s string) bool {
	return s == runrec.StatusFailed || s == runrec.StatusTimedOut || s == runrec.StatusOverBudget
}

// spendTracker remembers each running phase's reported spending, which
// the engine's EventDone does not repeat.
type spendTracker map[string]runrec.Spend

func (t spendTracker) fill(ev *engine.Event) {
	switch ev.Kind {
	case engine.EventSpend:
		t[ev.Phase] = ev.Spend
	case engine.EventDone:
		if ev.Spend == (runrec.Spend{}) {
			ev.Spend = t[ev.Phase]
		}
		delete(t, ev.Phase)
	}
}

// eventLine is the plain text of an event; ok is false for events that
// print nothing.
func eventLine(ev engine.Event) (line string, ok bool) {
	switch ev.Kind {
	case engine.EventStart:
		line = fmt.Sprintf("%s: running", ev.Phase)
		if ev.Attempt > 1 {
			line = fmt.Sprintf("%s: running attempt %d", ev.Phase, ev.Attempt)
		}
		if len(ev.Reasons) > 0 {
			line += " (" + strings.Join(ev.Reasons, "; ") + ")"
		}
	case engine.EventWarning:
		line = "warning: " + ev.Message
	case engine.EventRetry:
		line = fmt.Sprintf("%s: %s", ev.Phase, ev.Message)
	case engine.EventSpend, engine.EventBegin:
		return "", false
	case engine.EventStopping:
		line = stoppingLine(ev.Message)
	case engine.EventDone:
		line = doneLine(ev)
	case engine.EventRemoved:
		line = fmt.Sprintf("%s: removed temporary output %s", ev.Phase, ev.Message)
	default:
		return "", false
	}
	return line, true
}

func stoppingLine(reason string) string {
	switch reason {
	case engine.StopBudget:
		return "stopping: the run budget is spent; no new phase starts, running phases finish"
	case engine.StopRequest:
		return "stopping (cairn stop): no new phase starts, running phases finish"
	default:
		return "stopping: no new phase starts, running phases finish and are cached (Ctrl-C again to terminate them)"
	}
}

// doneLine is the line of a phase that reached its final status.
func doneLine(ev engine.Event) string {
	switch ev.Status {
	case runrec.StatusSucceeded:
		line := fmt.Sprintf("%s: ran in %s", ev.Phase, FormatDuration(ev.Duration))
		if ev.Spend != (runrec.Spend{}) {
			line += ", spent " + FormatSpend(ev.Spend)
		}
		return line
	case runrec.StatusCached:
		return fmt.Sprintf("%s: cached", ev.Phase)
	case runrec.StatusRestored:
		return fmt.Sprintf("%s: restored", ev.Phase)
	case runrec.StatusFailed, runrec.StatusTimedOut, runrec.StatusOverBudget:
		return fmt.Sprintf("%s: %s after %s: %v", ev.Phase, strings.ReplaceAll(ev.Status, "_", " "), FormatDuration(ev.Duration), ev.Err)
	default:
		line := fmt.Sprintf("%s: %s", ev.Phase, ev.Status)
		if len(ev.Reasons) > 0 {
			line += " (" + strings.Join(ev.Reasons, "; ") + ")"
		}
		return line
	}
}

// FormatDuration is how cairn prints a phase's or a run's duration:
// milliseconds under a second, tenths under a minute, whole seconds above.
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return d.Round(time.Second).String()
	}
}

// FormatSpend is how cairn prints what a phase or a run spent.
func FormatSpend(s runrec.Spend) string {
	out := "cost " + runrec.FormatCost(s.Cost)
	if s.Iterations > 0 {
		out += fmt.Sprintf(", %d iterations", s.Iterations)
	}
	return out
}

// summaryLine is the closing line of a run; verbose adds what was hashed.
func summaryLine(res *engine.RunResult, verbose bool) string {
	c := res.Counts
	total := 0
	for _, n := range c {
		total += n
	}
	parts := []string{fmt.Sprintf("%d ran", c[runrec.StatusSucceeded]), fmt.Sprintf("%d cached", c[runrec.StatusCached]), fmt.Sprintf("%d restored", c[runrec.StatusRestored])}
	for _, s := range []string{runrec.StatusFailed, runrec.StatusTimedOut, runrec.StatusOverBudget, runrec.StatusBlocked, runrec.StatusSkipped, runrec.StatusStopped} {
		if c[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[s], s))
		}
	}
	line := fmt.Sprintf("run %s %s: %d phases: %s in %s", res.RunID, res.Status, total, strings.Join(parts, ", "), FormatDuration(res.Duration))
	if res.Spent != (runrec.Spend{}) {
		line += "; spent " + FormatSpend(res.Spent)
	}
	if len(res.NotCached) > 0 {
		names := make([]string, 0, len(res.NotCached))
		for n := range res.NotCached {
			names = append(names, n)
		}
		sort.Strings(names)
		line += "; not cached (an input changed while it ran): " + strings.Join(names, ", ")
	}
	if res.TempRemoved > 0 {
		line += "; removed " + Plural(res.TempRemoved, "temporary output")
	}
	if verbose {
		line += fmt.Sprintf("; hashed %s, %s", Plural(int(res.HashedFiles), "file"), fsx.FormatBytes(res.HashedBytes))
	}
	return line
}

// Plural renders "1 phase", "2 phases".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") && !strings.HasSuffix(noun, "ay") && !strings.HasSuffix(noun, "ey") {
		return fmt.Sprintf("%d %sies", n, noun[:len(noun)-1])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// prefixWriter passes what it is given on as whole lines, each with a
// prefix; Close passes on an unfinished last line. Writes never fail.
type prefixWriter struct {
	prefix string
	emit   func(line string)
	buf    []byte
}

// maxLine bounds a line held back while waiting for its newline.
const maxLine = 64 << 10

func newPrefixWriter(prefix string, emit func(string)) *prefixWriter {
	return &prefixWriter{prefix: prefix, emit: emit}
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.prefix + strings.TrimSuffix(string(w.buf[:i]), "\r"))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxLine {
		w.emit(w.prefix + string(w.buf))
		w.buf = nil
	}
	if len(w.buf) == 0 {
		w.buf = nil
	}
	return len(p), nil
}

func (w *prefixWriter) Close() error {
	if len(w.buf) > 0 {
		w.emit(w.prefix + string(w.buf))
		w.buf = nil
	}
	return nil
}
