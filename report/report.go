package report

import (
	"bufio"
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-run/cairn/dag"
	"github.com/cairn-run/cairn/runrec"
)

// Input is what a report is made of. Run is required; everything else
// may be left zero.
type Input struct {
	// Run is the run's record.
	Run *runrec.RunState
	// Experiment is the experiment's name ("" shows the spec's file name).
	Experiment string
	// Graph is the spec's phase graph. Its vertices that the run has no
	// record of are drawn as "not in run". When nil, the phases of the
	// record are drawn without edges, and SpecError says why.
	Graph *dag.Graph
	// SpecError is why the spec could not be loaded, shown with a graph
	// drawn without edges.
	SpecError error
	// SpecChanged says the spec loaded but is not the one the run used
	// (its hash differs), so the graph drawn is today's.
	SpecChanged bool
	// Group returns the for_each block of a phase address, "" for a phase
	// without for_each. Nil reads it from the address: NAME["KEY"] is an
	// instance of NAME.
	Group func(addr string) string
	// Root is the workspace directory, against which the log paths of the
	// record are read.
	Root string
	// CachedLogs, if not nil, returns the logs of a phase that was cached
	// in the run (they belong to the run that produced the result).
	CachedLogs func(addr string, ps *runrec.PhaseState) (stdout, stderr []byte, err error)
	// Version, if not empty, is the cairn version shown in the footer.
	Version string
}

//go:embed page.html
var pageHTML string

// pageTemplate is parsed on first use: every cairn command links this
// package, and only `cairn report` needs the template.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"add": func(a, b int) int { return a + b },
	}).Parse(pageHTML))
})

// page is the data of the template.
type page struct {
	Title       string
	RunID       string
	Status      string
	StatusStyle style
	Facts       []fact
	GraphNote   string
	Graph       graphView
	Phases      []*phaseView
	Params      valueTable
	Metrics     valueTable
	Version     string
}

type fact struct{ Label, Value string }

// phaseView is one row of the phase table and its logs.
type phaseView struct {
	Addr        string
	Status      string
	StatusLabel string
	Style       style
	Duration    string
	Attempts    string
	Cost        string
	Iterations  string
	ExitCode    string
	Reasons     []string
	Error       string
	Logs        []logTail
	Open        bool // logs shown unfolded: the phase went wrong
	state       *runrec.PhaseState
}

// Write renders the report of in.Run to w as one HTML page. The page is
// the same bytes for the same input (and the same log files): it holds no
// time of its own making, so reports can be compared and kept in git. Logs that
// cannot be read are noted on the page; Write returns an error only when
// in.Run is nil or w fails.
func Write(w io.Writer, in Input) error {
	st := in.Run
	if st == nil {
		return fmt.Errorf("report: no run record")
	}
	group := in.Group
	if group == nil {
		group = groupFromAddr
	}

	// Every phase to draw: the spec's and the record's.
	var names []string
	var edges [][2]string
	if in.Graph != nil {
		names = in.Graph.Vertices()
		edges = in.Graph.Edges()
	}
	for a := range st.Phases {
		if in.Graph == nil || !in.Graph.Has(a) {
			names = append(names, a)
		}
	}
	slices.Sort(names)
	status := func(a string) string {
		if ps := st.Phases[a]; ps != nil {
			return ps.Status
		}
		return notInRun
	}
	sub := func(a string) string {
		ps := st.Phases[a]
		if ps == nil {
			return notInRun
		}
		s := statusLabel(ps.Status)
		if ps.DurationMS > 0 {
			s += " · " + fmtDuration(time.Duration(ps.DurationMS)*time.Millisecond)
		}
		return s
	}
	g := drawGraph(names, edges, group, status, sub)

	p := &page{
		Title:       cmp.Or(in.Experiment, st.Spec, "cairn"),
		RunID:       st.RunID,
		Status:      st.Status,
		StatusStyle: runStyle(st.Status),
		Facts:       facts(st, names),
		GraphNote:   graphNote(in, st, names),
		Graph:       g,
		Version:     in.Version,
	}

	// Rows follow the drawing: layer by layer, top to bottom, so the
	// table reads in pipeline order.
	var addrs []string
	for _, n := range sortedByDrawing(g.Nodes) {
		if ps := st.Phases[n.Name]; ps != nil {
			addrs = append(addrs, n.Name)
			pv := newPhaseView(n.Name, ps)
			var cached func() ([]byte, []byte, error)
			if in.CachedLogs != nil {
				cached = func() ([]byte, []byte, error) { return in.CachedLogs(n.Name, ps) }
			}
			pv.Logs = phaseLogs(in.Root, pv, cached)
			p.Phases = append(p.Phases, pv)
		}
	}
	p.Params = paramsTable(addrs, st.Phases)
	p.Metrics = metricsTable(addrs, st.Phases)

	bw := bufio.NewWriter(w)
	if err := pageTemplate().Execute(bw, p); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// groupFromAddr reads the for_each block from an instance address,
// NAME["KEY"].
func groupFromAddr(addr string) string {
	if i := strings.IndexByte(addr, '['); i > 0 && strings.HasSuffix(addr, "]") {
		return addr[:i]
	}
	return ""
}

func sortedByDrawing(nodes []nodeView) []nodeView {
	out := slices.Clone(nodes)
	slices.SortStableFunc(out, func(a, b nodeView) int {
		return cmp.Or(cmp.Compare(a.Layer, b.Layer), cmp.Compare(a.Y, b.Y), strings.Compare(a.Name, b.Name))
	})
	return out
}

func newPhaseView(addr string, ps *runrec.PhaseState) *phaseView {
	pv := &phaseView{
		Addr: addr, Status: ps.Status, StatusLabel: statusLabel(ps.Status), Style: styleOf(ps.Status),
		Reasons: ps.Reasons, Error: ps.Error, Open: bad(ps.Status), state: ps,
	}
	if ps.DurationMS > 0 {
		pv.Duration = fmtDuration(time.Duration(ps.DurationMS) * time.Millisecond)
	}
	if ps.Attempts > 0 {
		pv.Attempts = strconv.Itoa(ps.Attempts)
	}
	if ps.Cost != 0 {
		pv.Cost = runrec.FormatCost(ps.Cost)
	}
	if ps.Iterations != 0 {
		pv.Iterations = strconv.FormatInt(ps.Iterations, 10)
	}
	if ps.ExitCode != nil {
		pv.ExitCode = strconv.Itoa(*ps.ExitCode)
	}
	return pv
}

// runStyle colours the run's status like the phase status it matches.
func runStyle(status string) style {
	switch status {
	case runrec.RunSucceeded:
		return styleOf(runrec.StatusSucceeded)
	case runrec.RunFailed:
		return styleOf(runrec.StatusFailed)
	case runrec.RunStopped, runrec.RunInterrupted:
		return styleOf(runrec.StatusStopped)
	case runrec.RunRunning:
		return styleOf(runrec.StatusRunning)
	}
	return unknownStyle
}

// facts is the header's list: when, where, what it was asked and spent.
func facts(st *runrec.RunState, names []string) []fact {
	status := statusLabel(st.Status)
	if st.StopReason != "" {
		status += " (" + st.StopReason + ")"
	}
	fs := []fact{{"Run", st.RunID}, {"Status", status}}
	if !st.Started.IsZero() {
		fs = append(fs, fact{"Started", fmtTime(st.Started)})
	}
	end, endLabel := runEnd(st)
	if !end.IsZero() {
		fs = append(fs, fact{endLabel, fmtTime(end)})
		if !st.Started.IsZero() {
			d := fmtDuration(end.Sub(st.Started))
			if st.Status == runrec.RunRunning {
				d += " so far"
			}
			fs = append(fs, fact{"Duration", d})
		}
	}
	if st.Host != "" {
		host := st.Host
		if st.PID > 0 {
			host += fmt.Sprintf(" (pid %d)", st.PID)
		}
		fs = append(fs, fact{"Host", host})
	}
	targets := "all phases"
	if len(st.Request.Targets) > 0 {
		targets = strings.Join(st.Request.Targets, ", ")
	}
	fs = append(fs, fact{"Targets", targets})
	t := st.Total()
	spent := "cost " + runrec.FormatCost(t.Cost)
	if t.Iterations > 0 {
		spent += fmt.Sprintf(", %d iterations", t.Iterations)
	}
	if st.MaxCost != nil {
		spent += " of budget " + runrec.FormatCost(*st.MaxCost)
	}
	if st.SpentBefore != (runrec.Spend{}) {
		spent += fmt.Sprintf(" (this run: cost %s, %d iterations)", runrec.FormatCost(st.Spent.Cost), st.Spent.Iterations)
	}
	fs = append(fs, fact{"Spent", spent})
	if st.ResumeOf != "" {
		fs = append(fs, fact{"Resumes", st.ResumeOf})
	}
	if st.Spec != "" {
		spec := st.Spec
		if len(st.SpecHash) >= 12 {
			spec += " (sha256 " + st.SpecHash[:12] + ")"
		}
		fs = append(fs, fact{"Spec", spec})
	}
	fs = append(fs, fact{"Phases", countLine(st, names)})
	return fs
}

// runEnd is when the run ended, or its last heartbeat while it runs or
// when it was interrupted.
func runEnd(st *runrec.RunState) (time.Time, string) {
	if st.Ended != nil {
		return *st.Ended, "Ended"
	}
	return st.Heartbeat, "Last heartbeat"
}

// countLine counts the drawn phases by status: "3 succeeded, 1 failed,
// 2 not in run".
func countLine(st *runrec.RunState, names []string) string {
	c := map[string]int{}
	for _, a := range names {
		if ps := st.Phases[a]; ps != nil {
			c[ps.Status]++
		} else {
			c[notInRun]++
		}
	}
	var parts []string
	for _, s := range statusOrder {
		if c[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[s], statusLabel(s)))
			delete(c, s)
		}
	}
	var rest []string
	for s := range c {
		rest = append(rest, s)
	}
	slices.Sort(rest)
	for _, s := range rest {
		parts = append(parts, fmt.Sprintf("%d %s", c[s], statusLabel(s)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d: %s", len(names), strings.Join(parts, ", "))
}

// graphNote says what the drawing is not: edges missing for lack of a
// spec, or today's spec rather than the run's.
func graphNote(in Input, st *runrec.RunState, names []string) string {
	switch {
	case in.Graph == nil && in.SpecError != nil:
		return "The spec could not be loaded (" + firstLine(in.SpecError.Error()) + "), so the phases are drawn from the run record alone, without their dependencies."
	case in.Graph == nil:
		return "No spec was given, so the phases are drawn from the run record alone, without their dependencies."
	case in.SpecChanged:
		extra := 0
		for a := range st.Phases {
			if !in.Graph.Has(a) {
				extra++
			}
		}
		note := "The spec has changed since this run: the graph is drawn from the current spec."
		if extra > 0 {
			note += fmt.Sprintf(" %d phase(s) of the run are no longer in it and are drawn without dependencies.", extra)
		}
		return note
	}
	return ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// fmtTime shows a time in UTC, so readers anywhere see the same text.
func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// fmtDuration is cairn's usual duration: 850ms, 12.3s, 4m5s.
func fmtDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return d.Round(time.Second).String()
	}
}
