package main

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
)

// termView is the live display of a run on a terminal: finished phases,
// warnings and -v output print as permanent lines, and below them a live
// region, redrawn in place about ten times a second and on every event,
// shows each running phase and a bar of the run's progress. Closing it
// clears the region, shows the cursor again and prints a summary table.
type termView struct {
	mu    sync.Mutex
	w     io.Writer
	size  func() (width, height int)
	now   func() time.Time
	color bool

	begun    bool
	closed   bool
	stopping bool
	phases   []string // selected phases, in the spec's order
	running  []*livePhase
	spend    spendTracker
	tally    map[string]int         // finished phases by status
	rows     map[string]*summaryRow // finished phases by name
	drawn    int                    // lines of the live region on screen
	hidden   bool                   // the cursor is hidden

	stopTick chan struct{}
	tickDone chan struct{}
}

// livePhase is a running phase.
type livePhase struct {
	name    string
	started time.Time
	attempt int
	spend   engine.Spend
	note    string // "retrying" between attempts
}

var _ progressView = (*termView)(nil)

// refresh is how often the live region is redrawn while phases run.
const refresh = 100 * time.Millisecond

func newTermView(f *os.File, color bool) *termView {
	v := newTermViewWith(f, color, time.Now, func() (int, int) {
		w, h, err := term.GetSize(int(f.Fd()))
		if err != nil || w <= 0 {
			return 80, 24
		}
		return w, h
	})
	v.stopTick, v.tickDone = make(chan struct{}), make(chan struct{})
	go v.tick()
	return v
}

// newTermViewWith returns a view drawing on w without a ticker: it
// redraws only on events (tests drive it with a fake clock).
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
			if v.begun && !v.closed && len(v.running) > 0 {
				v.redraw(nil)
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
	var above []string
	switch ev.Kind {
	case engine.EventBegin:
		v.begun = true
		v.phases = ev.Phases
	case engine.EventStart:
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
		above = append(above, v.style(ansi.Style{}.ForegroundColor(ansi.Yellow), ev.Phase+": "+ev.Message))
	case engine.EventWarning:
		above = append(above, v.style(ansi.Style{}.ForegroundColor(ansi.Yellow), "warning: "+ev.Message))
	case engine.EventStopping:
		v.stopping = true
		above = append(above, v.style(ansi.Style{}.ForegroundColor(ansi.Yellow), stoppingLine(ev.Message)))
	case engine.EventDone:
		v.drop(ev.Phase)
		v.tally[ev.Status]++
		v.rows[ev.Phase] = &summaryRow{phase: ev.Phase, status: ev.Status, duration: ev.Duration, spend: ev.Spend}
		line := doneLine(ev)
		head := ev.Phase + ": "
		above = append(above, head+v.style(statusStyle(ev.Status), strings.TrimPrefix(line, head)))
	}
	v.redraw(above)
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

// redraw clears the live region, prints the permanent lines and draws
// the region again, in one write. The cursor rests at the start of the
// line below the region, so clearing is: back to column one, up by the
// region's height, erase to the end of the screen (which also erases a
// "^C" the terminal echoed there).
func (v *termView) redraw(above []string) {
	var b strings.Builder
	v.clear(&b)
	for _, l := range above {
		b.WriteString(l)
		b.WriteByte('\n')
	}
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
// line per running phase (as many as fit) and the progress bar. No line
// is wider than width-1 columns, so none wraps.
func (v *termView) frame(width, height int) []string {
	limit := max(width-1, 10)
	now := v.now()
	shown := v.running
	// Keep a line for the bar and one for the cursor below the region.
	room := max(height-2, 1)
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
	var lines []string
	for _, lp := range shown {
		name := ansi.Truncate(lp.name, nameW, "…")
		line := "  " + v.style(ansi.Style{}.Bold(), name) + strings.Repeat(" ", nameW-ansi.StringWidth(name))
		line += fmt.Sprintf("  %6s", fmtElapsed(now.Sub(lp.started)))
		if lp.spend != (engine.Spend{}) {
			line += "  " + fmtSpend(lp.spend)
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
	waiting := max(total-finished-running, 0)
	parts := []string{
		fmt.Sprintf("done %d", v.tally[engine.StatusSucceeded]),
		fmt.Sprintf("cached %d", v.tally[engine.StatusCached]+v.tally[engine.StatusRestored]),
		fmt.Sprintf("running %d", running),
		fmt.Sprintf("waiting %d", waiting),
	}
	if n := v.tally[engine.StatusFailed] + v.tally[engine.StatusTimedOut] + v.tally[engine.StatusOverBudget]; n > 0 {
		parts = append(parts, v.style(statusStyle(engine.StatusFailed), fmt.Sprintf("failed %d", n)))
	}
	for _, s := range []string{engine.StatusBlocked, engine.StatusStopped, engine.StatusSkipped} {
		if n := v.tally[s]; n > 0 {
			parts = append(parts, v.style(statusStyle(s), fmt.Sprintf("%s %d", s, n)))
		}
	}
	text := fmt.Sprintf(" %d/%d  ", finished, total)
	if v.stopping {
		text += v.style(ansi.Style{}.ForegroundColor(ansi.Yellow), "stopping") + " · "
	}
	text += strings.Join(parts, " · ")
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

func (v *termView) phaseOutput(phase string) (io.WriteCloser, io.WriteCloser) {
	prefix := v.style(ansi.Style{}.Faint(), "["+phase+"]") + " "
	emit := func(line string) {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.redraw([]string{line})
	}
	return newPrefixWriter(prefix, emit), newPrefixWriter(prefix, emit)
}

// above returns a writer whose lines print above the live region.
func (v *termView) above(w io.Writer) io.Writer {
	return newPrefixWriter("", func(line string) {
		v.mu.Lock()
		defer v.mu.Unlock()
		var b strings.Builder
		v.clear(&b)
		_, _ = io.WriteString(v.w, b.String())
		fmt.Fprintln(w, line)
		v.redraw(nil)
	})
}

// close clears the live region, shows the cursor and prints the summary
// table and the closing line.
func (v *termView) close(res *engine.RunResult) {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return
	}
	v.closed = true
	var b strings.Builder
	v.clear(&b)
	if v.hidden {
		b.WriteString(ansi.ShowCursor)
		v.hidden = false
	}
	if res != nil {
		if v.begun && len(v.phases) > 0 {
			b.WriteByte('\n')
			v.table(&b)
		}
		b.WriteString(summaryLine(res))
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
	case engine.StatusSucceeded:
		return ansi.Style{}.ForegroundColor(ansi.Green)
	case engine.StatusCached, engine.StatusRestored:
		return ansi.Style{}.Faint()
	case engine.StatusFailed, engine.StatusTimedOut, engine.StatusOverBudget:
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
