package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/estimate"
	"github.com/cairn-run/cairn/runrec"
)

// termView is the live display of a run on a terminal: finished phases,
// warnings and -v output print as permanent lines, and below them a live
// region, redrawn in place about ten times a second and on every event,
// shows each running phase and a bar of the run's progress. Closing it
// clears the region, shows the cursor again and prints a summary table.
type termView struct {
	verbose bool // the closing line says what was hashed
	mu      sync.Mutex
	w       io.Writer
	size    func() (width, height int)
	now     func() time.Time
	color   bool

	begun    bool
	closed   bool
	stopping bool
	phases   []string // selected phases, in the spec's order
	running  []*livePhase
	hashing  []hashing // phases hashing their inputs for a while, in order
	spend    spendTracker
	tally    map[string]int         // finished phases by status
	rows     map[string]*summaryRow // finished phases by name
	drawn    int                    // lines of the live region on screen
	hidden   bool                   // the cursor is hidden
	pending  []string               // permanent lines not yet printed
	dirty    bool                   // a redraw is due
	lastDraw time.Time
	// minGap spaces redraws on events: those that come sooner are left
	// to the ticker, so that a burst of events (a thousand cached phases)
	// costs a few redraws, not one each, and a slow terminal does not
	// slow the run down.
	minGap time.Duration

	// ests holds the phases' estimates, once the run reported them, and
	// jobs its job slots: the bar's ETA (see eta).
	ests map[string]*estimate.Estimate
	jobs int

	stopTick chan struct{}
	tickDone chan struct{}
}

// livePhase is a running phase.
type livePhase struct {
	name    string
	started time.Time
	attempt int
	spend   runrec.Spend
	note    string // "retrying" between attempts
}

var _ View = (*termView)(nil)

// refresh is how often the live region is redrawn while phases run.
const refresh = 100 * time.Millisecond

func newTermView(f *os.File, color bool) *termView {
	v := newTermViewWith(f, color, time.Now, func() (int, int) {
		w, h, err := term.GetSize(int(f.Fd()))
		if err != nil || w <= 0 {
			return 80, 24
		}
		if h <= 0 {
			h = 24 // a pty whose size was never set (script, some CI runners)
		}
		return w, h
	})
	v.minGap = refresh / 3
	v.stopTick, v.tickDone = make(chan struct{}), make(chan struct{})
	go v.tick()
	return v
}

// newTermViewWith returns a view drawing on w without a ticker: it
// redraws on every event and only then (tests drive it with a fake
// clock).
func newTermViewWith(w io.Writer, color bool, now func() time.Time, size func() (int, int)) *termView {
	return &termView{w: w, size: size, now: now, color: color, spend: spendTracker{},
		tally: map[string]int{}, rows: map[string]*summaryRow{}}
}

func (v *termView) tick() {
	defer close(v.tickDone)
	t := time.NewTicker(refresh)
	defer t.Stop()
	for {
		select {
		case <-v.stopTick:
			return
		case <-t.C:
			v.mu.Lock()
			if !v.closed && (v.dirty || v.begun && len(v.running) > 0) {
				v.redraw()
			}
			v.mu.Unlock()
		}
	}
}

func (v *termView) Report(ev engine.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return
	}
	v.spend.fill(&ev)
	switch ev.Kind {
	case engine.EventBegin:
		v.begun = true
		v.phases = ev.Phases
	case engine.EventEstimate:
		v.ests, v.jobs = ev.Estimates, ev.Total.Jobs
	case engine.EventStart:
		if ev.Estimate != nil && v.ests != nil {
			v.ests[ev.Phase] = ev.Estimate
		}
		lp := v.live(ev.Phase)
		if lp == nil {
			lp = &livePhase{name: ev.Phase}
			v.running = append(v.running, lp)
		}
		lp.started, lp.attempt, lp.note = ev.Time, ev.Attempt, ""
	case engine.EventSpend:
		if lp := v.live(ev.Phase); lp != nil {
			lp.spend = ev.Spend
		}
		// The ticker shows it: spending can be reported many times a
		// second.
		return
	case engine.EventRetry:
		if lp := v.live(ev.Phase); lp != nil {
			lp.note = "retrying"
		}
		v.pending = append(v.pending, v.style(ansi.Style{}.ForegroundColor(ansi.Yellow), ev.Phase+": "+ev.Message))
	case engine.EventWarning:
		v.pending = append(v.pending, v.style(ansi.Style{}.ForegroundColor(ansi.Yellow), "warning: "+ev.Message))
	case engine.EventStopping:
		v.stopping = true
		v.pending = append(v.pending, v.style(ansi.Style{}.ForegroundColor(ansi.Yellow), stoppingLine(ev.Message)))
	case engine.EventDone:
		v.drop(ev.Phase)
		v.tally[ev.Status]++
		v.rows[ev.Phase] = &summaryRow{phase: ev.Phase, status: ev.Status, duration: ev.Duration, spend: ev.Spend}
		line := doneLine(ev)
		head := ev.Phase + ": "
		v.pending = append(v.pending, head+v.style(statusStyle(ev.Status), strings.TrimPrefix(line, head)))
	}
	v.update()
}

// update redraws now, or marks a redraw due for the ticker when the last
// one was less than minGap ago.
func (v *termView) update() {
	if v.minGap > 0 && time.Since(v.lastDraw) < v.minGap {
		v.dirty = true
		return
	}
	v.redraw()
}

func (v *termView) live(name string) *livePhase {
	for _, lp := range v.running {
		if lp.name == name {
			return lp
		}
	}
	return nil
}

func (v *termView) drop(name string) {
	for i, lp := range v.running {
		if lp.name == name {
			v.running = append(v.running[:i], v.running[i+1:]...)
			return
		}
	}
}

// redraw clears the live region, prints the pending permanent lines and
// draws the region again, in one write. The cursor rests at the start of the
// line below the region, so clearing is: back to column one, up by the
// region's height, erase to the end of the screen (which also erases a
// "^C" the terminal echoed there).
func (v *termView) redraw() {
	var b strings.Builder
	v.flush(&b)
	if v.begun && !v.closed {
		if !v.hidden {
			b.WriteString(ansi.HideCursor)
			v.hidden = true
		}
		w, h := v.size()
		lines := v.frame(w, h)
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		v.drawn = len(lines)
	}
	_, _ = io.WriteString(v.w, b.String())
	v.dirty = false
	v.lastDraw = time.Now()
}

// flush clears the live region and writes the pending lines to b.
func (v *termView) flush(b *strings.Builder) {
	v.clear(b)
	for _, l := range v.pending {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	v.pending = nil
}

func (v *termView) clear(b *strings.Builder) {
	if v.drawn == 0 {
		return
	}
	b.WriteString("\r")
	b.WriteString(ansi.CursorUp(v.drawn))
	b.WriteString(ansi.EraseScreenBelow)
	v.drawn = 0
}

// frame renders the live region for a terminal of the given size: a
// line per phase hashing its inputs and per running phase (as many as
// fit) and the progress bar. No line is wider than width-1 columns, so
// none wraps.
func (v *termView) frame(width, height int) []string {
	limit := max(width-1, 10)
	now := v.now()
	shown := v.running
	// Keep a line for the bar and one for the cursor below the region;
	// hashing takes at most half of the rest.
	room := max(height-2, 1)
	var lines []string
	for _, h := range v.hashing[:min(len(v.hashing), room/2)] {
		lines = append(lines, ansi.Truncate("  "+hashLine(h.phase, h.p), limit, "…"))
	}
	room = max(room-len(lines), 1)
	more := 0
	if len(shown) > room {
		more = len(shown) - (room - 1)
		shown = shown[:room-1]
	}
	nameW := 0
	for _, lp := range shown {
		nameW = max(nameW, ansi.StringWidth(lp.name))
	}
	nameW = min(nameW, limit/2)
	for _, lp := range shown {
		name := ansi.Truncate(lp.name, nameW, "…")
		line := "  " + v.style(ansi.Style{}.Bold(), name) + strings.Repeat(" ", nameW-ansi.StringWidth(name))
		line += fmt.Sprintf("  %6s", fmtElapsed(now.Sub(lp.started)))
		if lp.spend != (runrec.Spend{}) {
			line += "  " + FormatSpend(lp.spend)
		}
		if lp.attempt > 1 {
			line += fmt.Sprintf("  attempt %d", lp.attempt)
		}
		if lp.note != "" {
			line += "  " + lp.note
		}
		lines = append(lines, ansi.Truncate(line, limit, "…"))
	}
	if more > 0 {
		lines = append(lines, v.style(ansi.Style{}.Faint(), fmt.Sprintf("  … and %d more running", more)))
	}
	return append(lines, ansi.Truncate(v.bar(limit), limit, "…"))
}

// bar is the total line, at most width columns when it can be:
//
//	[=====>              ] 12/40  done 8 · cached 3 · running 2 · waiting 26 · failed 1
func (v *termView) bar(width int) string {
	total := len(v.phases)
	finished := 0
	for _, n := range v.tally {
		finished += n
	}
	running := len(v.running)
	type count struct {
		label string
		n     int
		style ansi.Style
	}
	counts := []count{
		{"done", v.tally[runrec.StatusSucceeded], nil},
		{"cached", v.tally[runrec.StatusCached] + v.tally[runrec.StatusRestored], nil},
		{"running", running, nil},
		{"waiting", max(total-finished-running, 0), nil},
		{"failed", v.tally[runrec.StatusFailed] + v.tally[runrec.StatusTimedOut] + v.tally[runrec.StatusOverBudget], statusStyle(runrec.StatusFailed)},
	}
	for _, s := range []string{runrec.StatusBlocked, runrec.StatusStopped, runrec.StatusSkipped} {
		counts = append(counts, count{s, v.tally[s], statusStyle(s)})
	}
	// The first four counts are always shown, the others when not zero;
	// on a narrow terminal, only counts that are not zero. Once the run is
	// stopping, what waits will not start: "stopping" replaces its count.
	render := func(narrow bool) string {
		var parts []string
		for i, c := range counts {
			if c.n == 0 && (narrow || i > 3) || c.label == "waiting" && v.stopping {
				continue
			}
			part := fmt.Sprintf("%s %d", c.label, c.n)
			if c.style != nil {
				part = v.style(c.style, part)
			}
			parts = append(parts, part)
		}
		if v.stopping {
			// What waits will not start.
			parts = append(parts, v.style(ansi.Style{}.ForegroundColor(ansi.Yellow), "stopping"))
		}
		if eta := v.eta(); eta != "" && !v.stopping {
			parts = append(parts, eta)
		}
		return fmt.Sprintf(" %d/%d  ", finished, total) + strings.Join(parts, " · ")
	}
	text := render(false)
	if ansi.StringWidth(text)+7 > width {
		text = render(true)
	}
	// The bar takes what the text leaves, between 5 and 20 cells.
	cells := min(max(width-ansi.StringWidth(text)-2, 5), 20)
	fill := 0
	if total > 0 {
		fill = finished * cells / total
	}
	bar := strings.Repeat("=", fill)
	if fill > 0 && fill < cells {
		bar = bar[:fill-1] + ">"
	}
	return "[" + v.style(ansi.Style{}.ForegroundColor(ansi.Green), bar) + strings.Repeat(" ", cells-fill) + "]" + text
}

func (v *termView) PhaseOutput(phase string) (io.WriteCloser, io.WriteCloser) {
	prefix := v.style(ansi.Style{}.Faint(), "["+phase+"]") + " "
	emit := func(line string) {
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.closed {
			_, _ = io.WriteString(v.w, line+"\n")
			return
		}
		v.pending = append(v.pending, line)
		v.update()
	}
	return newPrefixWriter(prefix, emit), newPrefixWriter(prefix, emit)
}

// Above returns a writer whose lines print above the live region.
func (v *termView) Above(w io.Writer) io.Writer {
	return newPrefixWriter("", func(line string) {
		v.mu.Lock()
		defer v.mu.Unlock()
		var b strings.Builder
		v.flush(&b)
		_, _ = io.WriteString(v.w, b.String())
		fmt.Fprintln(w, line)
		if !v.closed {
			v.redraw()
		}
	})
}

// Close clears the live region, shows the cursor and prints the summary
// table and the closing line.
func (v *termView) Close(res *engine.RunResult) {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return
	}
	v.closed = true
	var b strings.Builder
	v.flush(&b)
	if v.hidden {
		b.WriteString(ansi.ShowCursor)
		v.hidden = false
	}
	if res != nil {
		v.table(&b)
		b.WriteString(summaryLine(res, v.verbose))
		b.WriteByte('\n')
	}
	_, _ = io.WriteString(v.w, b.String())
	v.mu.Unlock()
	if v.stopTick != nil {
		close(v.stopTick)
		<-v.tickDone
	}
}

// style applies s to text when colour is on.
func (v *termView) style(s ansi.Style, text string) string {
	if !v.color || text == "" {
		return text
	}
	return s.Styled(text)
}

func statusStyle(status string) ansi.Style {
	switch status {
	case runrec.StatusSucceeded:
		return ansi.Style{}.ForegroundColor(ansi.Green)
	case runrec.StatusCached, runrec.StatusRestored:
		return ansi.Style{}.Faint()
	case runrec.StatusFailed, runrec.StatusTimedOut, runrec.StatusOverBudget:
		return ansi.Style{}.ForegroundColor(ansi.Red)
	default:
		return ansi.Style{}.ForegroundColor(ansi.Yellow)
	}
}

// fmtElapsed is a running phase's time so far, to a tenth of a second.
func fmtElapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Truncate(time.Second).String()
}
