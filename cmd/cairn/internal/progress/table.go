package progress

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/cairn-run/cairn/runrec"
)

// summaryRow is one phase in the table printed at the end of a run on a
// terminal.
type summaryRow struct {
	phase    string
	status   string
	duration time.Duration
	spend    runrec.Spend
}

// bigRun is the number of phases past which the summary table leaves out
// cached, restored and skipped phases and only counts them.
const bigRun = 20

// table writes the summary table, after a blank line and followed by
// one: phase, status, duration, cost (and iterations when some phase
// reported any), in the spec's order. A phase the run never reached is
// skipped. It writes nothing when no phase is left to list.
func (v *termView) table(b *strings.Builder) {
	rows := make([]*summaryRow, 0, len(v.phases))
	for _, name := range v.phases {
		r := v.rows[name]
		if r == nil {
			r = &summaryRow{phase: name, status: runrec.StatusSkipped}
		}
		rows = append(rows, r)
	}
	var left map[string]int
	if len(rows) > bigRun {
		left = map[string]int{}
		kept := rows[:0]
		for _, r := range rows {
			switch r.status {
			case runrec.StatusCached, runrec.StatusRestored, runrec.StatusSkipped:
				left[r.status]++
			default:
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	iters := false
	for _, r := range rows {
		iters = iters || r.spend.Iterations > 0
	}
	header := []string{"PHASE", "STATUS", "DURATION", "COST"}
	if iters {
		header = append(header, "ITERATIONS")
	}
	cells := [][]string{header}
	for _, r := range rows {
		dur := "-"
		switch r.status {
		case runrec.StatusSucceeded, runrec.StatusFailed, runrec.StatusTimedOut, runrec.StatusOverBudget, runrec.StatusStopped:
			dur = FormatDuration(r.duration)
		}
		cost := "-"
		if r.spend != (runrec.Spend{}) {
			cost = runrec.FormatCost(r.spend.Cost)
		}
		row := []string{r.phase, v.style(statusStyle(r.status), strings.ReplaceAll(r.status, "_", " ")), dur, cost}
		if iters {
			it := "-"
			if r.spend.Iterations > 0 {
				it = strconv.FormatInt(r.spend.Iterations, 10)
			}
			row = append(row, it)
		}
		cells = append(cells, row)
	}
	if len(rows) == 0 {
		// All cached or skipped: the closing line says as much.
		return
	}
	b.WriteByte('\n')
	writeColumns(b, cells, v.color)
	if len(left) > 0 {
		var parts []string
		for _, s := range []string{runrec.StatusCached, runrec.StatusRestored, runrec.StatusSkipped} {
			if n := left[s]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, s))
			}
		}
		fmt.Fprintf(b, "%s not listed\n", strings.Join(parts, ", "))
	}
	b.WriteByte('\n')
}

// writeColumns writes cells as left-aligned columns two spaces apart,
// measuring cells by their width on screen (colour codes take none); the
// first row is the header, bold when bold is set.
func writeColumns(b *strings.Builder, cells [][]string, bold bool) {
	widths := make([]int, len(cells[0]))
	for _, row := range cells {
		for i, c := range row {
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	for n, row := range cells {
		var line strings.Builder
		for i, c := range row {
			if i > 0 {
				line.WriteString("  ")
			}
			line.WriteString(c)
			if i < len(row)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-ansi.StringWidth(c)))
			}
		}
		text := line.String()
		if n == 0 && bold {
			text = ansi.Style{}.Bold().Styled(text)
		}
		b.WriteString(text)
		b.WriteByte('\n')
	}
}
