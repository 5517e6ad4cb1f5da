package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairn-run/cairn/engine"
)

// gateFlags are the phase-selection flags run and plan share.
type gateFlags struct {
	Force, From, Until, Only []string
}

func (o *gateFlags) AddFlags(f *pflag.FlagSet) {
	f.StringArrayVar(&o.Force, "force", nil, "rerun `PHASE` even if it is cached (repeatable)")
	f.StringArrayVar(&o.From, "from", nil, "rerun `PHASE` and everything downstream of it (repeatable)")
	f.StringArrayVar(&o.Until, "until", nil, "stop after `PHASE`: consider only it and what it needs (repeatable)")
	f.StringArrayVar(&o.Only, "only", nil, "run only `PHASE`; what it needs must already be in the workspace or cached (repeatable)")
}

func (o *gateFlags) gates() engine.Gates {
	return engine.Gates{Force: o.Force, From: o.From, Until: o.Until, Only: o.Only}
}

type runOptions struct {
	gateFlags
	Jobs      int
	KeepGoing bool
	DryRun    bool
	JSON      bool
}

func (o *runOptions) AddFlags(f *pflag.FlagSet) {
	o.gateFlags.AddFlags(f)
	f.IntVarP(&o.Jobs, "jobs", "j", 0, "run up to `N` phases at once (default: the spec's concurrency, else the number of CPUs)")
	f.BoolVar(&o.KeepGoing, "keep-going", false, "keep running independent phases after a phase failed")
	f.BoolVar(&o.DryRun, "dry-run", false, "show what would run, like plan, and run nothing")
	f.BoolVar(&o.JSON, "json", false, "print progress as JSON lines, one event per line")
}

func newRunCommand(g *globals) *cobra.Command {
	var opts runOptions
	cmd := &cobra.Command{
		Use:   "run [PHASE...]",
		Short: "Run phases (default: all) and what they need, skipping what is cached",
		Long: `Run the named phases (default: all) and what they need, skipping what is cached.

The first Ctrl-C (or cairn stop from another shell) starts no new phase and
lets running phases finish and be cached; a second Ctrl-C terminates them.
cairn resume continues a stopped or failed run.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.DryRun {
				return runPlan(g, planOptions{JSON: opts.JSON, gateFlags: opts.gateFlags}, args, cmd.OutOrStdout())
			}
			req := engine.Request{
				Targets:   args,
				Gates:     opts.gates(),
				Jobs:      opts.Jobs,
				KeepGoing: opts.KeepGoing,
				Vars:      g.Vars,
				VarFiles:  g.VarFiles,
			}
			return runRun(g.watchContext(cmd.Context()), g, engine.RunOptions{Request: req}, opts.JSON, cmd.OutOrStdout())
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

func runRun(ctx context.Context, g *globals, ro engine.RunOptions, asJSON bool, out io.Writer) error {
	var rep engine.Reporter = &lineReporter{w: out}
	if asJSON {
		rep = &jsonReporter{enc: json.NewEncoder(out)}
	}
	s, eng, err := g.openEngine(rep)
	if err != nil {
		return err
	}
	// Values of sensitive variables are not written to state.json: a
	// resumed run needs them given again.
	ro.Vars = dropSensitive(ro.Vars, s.SensitiveVars)
	ro.Stop = g.graceful()
	res, err := eng.Run(ctx, ro)
	if res == nil {
		return err
	}
	if asJSON {
		rep.(*jsonReporter).summary(res)
	} else {
		fmt.Fprintln(out, summaryLine(res))
	}
	if err != nil {
		return err
	}
	switch res.Status {
	case engine.RunStopped:
		return &exitError{code: exitStopped, msg: fmt.Sprintf("run %s stopped (%s); finished phases are cached: cairn resume continues it", res.RunID, res.StopReason)}
	case engine.RunFailed:
		names := make([]string, 0, len(res.Failures))
		for n := range res.Failures {
			names = append(names, n)
		}
		sort.Strings(names)
		var b strings.Builder
		for i, n := range names {
			if i > 0 {
				b.WriteString("\ncairn: ")
			}
			b.WriteString(res.Failures[n].Error())
		}
		if res.BudgetSkipped > 0 {
			if b.Len() > 0 {
				b.WriteString("\ncairn: ")
			}
			fmt.Fprintf(&b, "run budget spent (%s): %s not started; raise budget.max_cost and run cairn resume to continue", fmtSpend(res.Spent), plural(res.BudgetSkipped, "phase"))
		}
		return &exitError{code: exitFailed, msg: b.String()}
	}
	return nil
}

func fmtSpend(s engine.Spend) string {
	out := "cost " + engine.FormatCost(s.Cost)
	if s.Iterations > 0 {
		out += fmt.Sprintf(", %d iterations", s.Iterations)
	}
	return out
}

// summaryLine is the closing line of a run.
func summaryLine(res *engine.RunResult) string {
	c := res.Counts
	total := 0
	for _, n := range c {
		total += n
	}
	parts := []string{fmt.Sprintf("%d ran", c[engine.StatusSucceeded]), fmt.Sprintf("%d cached", c[engine.StatusCached]), fmt.Sprintf("%d restored", c[engine.StatusRestored])}
	for _, s := range []string{engine.StatusFailed, engine.StatusTimedOut, engine.StatusOverBudget, engine.StatusBlocked, engine.StatusSkipped, engine.StatusStopped} {
		if c[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[s], s))
		}
	}
	line := fmt.Sprintf("run %s %s: %d phases: %s in %s", res.RunID, res.Status, total, strings.Join(parts, ", "), fmtDuration(res.Duration))
	if res.Spent != (engine.Spend{}) {
		line += "; spent " + fmtSpend(res.Spent)
	}
	return line
}

// lineReporter prints one line per phase event: plain text for pipes, logs
// and CI.
type lineReporter struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *lineReporter) Report(ev engine.Event) {
	var line string
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
	case engine.EventSpend:
		return
	case engine.EventStopping:
		switch ev.Message {
		case engine.StopBudget:
			line = "stopping: the run budget is spent; no new phase starts, running phases finish"
		case engine.StopRequest:
			line = "stopping (cairn stop): no new phase starts, running phases finish"
		default:
			line = "stopping: no new phase starts, running phases finish and are cached (Ctrl-C again to terminate them)"
		}
	case engine.EventDone:
		switch ev.Status {
		case engine.StatusSucceeded:
			line = fmt.Sprintf("%s: ran in %s", ev.Phase, fmtDuration(ev.Duration))
			if ev.Spend != (engine.Spend{}) {
				line += ", spent " + fmtSpend(ev.Spend)
			}
		case engine.StatusCached:
			line = fmt.Sprintf("%s: cached", ev.Phase)
		case engine.StatusRestored:
			line = fmt.Sprintf("%s: restored", ev.Phase)
		case engine.StatusFailed, engine.StatusTimedOut, engine.StatusOverBudget:
			line = fmt.Sprintf("%s: %s after %s: %v", ev.Phase, strings.ReplaceAll(ev.Status, "_", " "), fmtDuration(ev.Duration), ev.Err)
		default:
			line = fmt.Sprintf("%s: %s", ev.Phase, ev.Status)
			if len(ev.Reasons) > 0 {
				line += " (" + strings.Join(ev.Reasons, "; ") + ")"
			}
		}
	}
	r.mu.Lock()
	fmt.Fprintln(r.w, line)
	r.mu.Unlock()
}

func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return d.Round(time.Second).String()
	}
}

// jsonReporter prints one JSON object per event, for machines.
type jsonReporter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

type jsonEvent struct {
	Time       time.Time `json:"time"`
	Event      string    `json:"event"`
	Phase      string    `json:"phase,omitempty"`
	Status     string    `json:"status,omitempty"`
	Reasons    []string  `json:"reasons,omitempty"`
	DurationMS int64     `json:"duration_ms,omitempty"`
	Attempt    int       `json:"attempt,omitempty"`
	Cost       float64   `json:"cost,omitempty"`
	Iterations int64     `json:"iterations,omitempty"`
	Error      string    `json:"error,omitempty"`
	Message    string    `json:"message,omitempty"`
}

var eventNames = map[engine.EventKind]string{
	engine.EventStart:    "start",
	engine.EventDone:     "done",
	engine.EventWarning:  "warning",
	engine.EventStopping: "stopping",
	engine.EventRetry:    "retry",
	engine.EventSpend:    "spend",
}

func (r *jsonReporter) Report(ev engine.Event) {
	je := jsonEvent{
		Time: ev.Time.UTC(), Event: eventNames[ev.Kind], Phase: ev.Phase, Status: ev.Status, Reasons: ev.Reasons,
		DurationMS: ev.Duration.Milliseconds(), Attempt: ev.Attempt, Cost: ev.Spend.Cost, Iterations: ev.Spend.Iterations,
		Message: ev.Message,
	}
	if ev.Err != nil {
		je.Error = ev.Err.Error()
	}
	r.mu.Lock()
	_ = r.enc.Encode(je)
	r.mu.Unlock()
}

func (r *jsonReporter) summary(res *engine.RunResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.enc.Encode(struct {
		Time       time.Time      `json:"time"`
		Event      string         `json:"event"`
		RunID      string         `json:"run_id"`
		Status     string         `json:"status"`
		StopReason string         `json:"stop_reason,omitempty"`
		Counts     map[string]int `json:"counts"`
		Cost       float64        `json:"cost"`
		Iterations int64          `json:"iterations"`
		DurationMS int64          `json:"duration_ms"`
	}{time.Now().UTC(), "summary", res.RunID, res.Status, res.StopReason, res.Counts, res.Spent.Cost, res.Spent.Iterations, res.Duration.Milliseconds()})
}

// plural renders "1 phase", "2 phases".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") && !strings.HasSuffix(noun, "ay") && !strings.HasSuffix(noun, "ey") {
		return fmt.Sprintf("%d %sies", n, noun[:len(noun)-1])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// dropSensitive removes NAME=VALUE entries naming a sensitive variable.
func dropSensitive(vars, sensitive []string) []string {
	if len(sensitive) == 0 {
		return vars
	}
	var out []string
	for _, kv := range vars {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(sensitive, name) {
			out = append(out, kv)
		}
	}
	return out
}
