package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairn-run/cairn/engine"
)

type runOptions struct {
	Jobs      int
	Force     []string
	KeepGoing bool
	DryRun    bool
}

func (o *runOptions) AddFlags(f *pflag.FlagSet) {
	f.IntVarP(&o.Jobs, "jobs", "j", 0, "run up to `N` phases at once (default: the spec's concurrency, else the number of CPUs)")
	f.StringArrayVar(&o.Force, "force", nil, "rerun `PHASE` even if it is cached (repeatable)")
	f.BoolVar(&o.KeepGoing, "keep-going", false, "keep running independent phases after a phase failed")
	f.BoolVar(&o.DryRun, "dry-run", false, "show what would run, like plan, and run nothing")
}

func newRunCommand(g *globals) *cobra.Command {
	var opts runOptions
	cmd := &cobra.Command{
		Use:   "run [PHASE...]",
		Short: "Run phases (default: all) and what they need, skipping what is cached",
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.DryRun {
				return runPlan(g, planOptions{}, args, opts.Force, cmd.OutOrStdout())
			}
			return runRun(cmd.Context(), g, opts, args, cmd.OutOrStdout())
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

func runRun(ctx context.Context, g *globals, opts runOptions, targets []string, out io.Writer) error {
	rep := &lineReporter{w: out}
	_, eng, err := g.openEngine(rep)
	if err != nil {
		return err
	}
	flags := map[string]any{}
	if opts.Jobs != 0 {
		flags["jobs"] = opts.Jobs
	}
	if len(opts.Force) > 0 {
		flags["force"] = opts.Force
	}
	if opts.KeepGoing {
		flags["keep_going"] = true
	}
	if len(g.Vars) > 0 {
		flags["var"] = g.Vars
	}
	res, err := eng.Run(ctx, engine.RunOptions{
		Targets:   targets,
		Force:     opts.Force,
		Jobs:      opts.Jobs,
		KeepGoing: opts.KeepGoing,
		Flags:     flags,
	})
	if res == nil {
		return err
	}
	fmt.Fprintln(out, summaryLine(res))
	if err != nil {
		return err
	}
	switch res.Status {
	case engine.RunStopped:
		return &exitError{code: exitStopped, msg: fmt.Sprintf("run %s stopped; run cairn run again to resume", res.RunID)}
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
		return &exitError{code: exitFailed, msg: b.String()}
	}
	return nil
}

// summaryLine is the closing line of a run.
func summaryLine(res *engine.RunResult) string {
	c := res.Counts
	total := 0
	for _, n := range c {
		total += n
	}
	parts := []string{fmt.Sprintf("%d ran", c[engine.StatusSucceeded]), fmt.Sprintf("%d cached", c[engine.StatusCached]), fmt.Sprintf("%d restored", c[engine.StatusRestored])}
	for _, s := range []string{engine.StatusFailed, engine.StatusBlocked, engine.StatusSkipped, engine.StatusStopped} {
		if c[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[s], s))
		}
	}
	return fmt.Sprintf("run %s %s: %d phases: %s in %s", res.RunID, res.Status, total, strings.Join(parts, ", "), fmtDuration(res.Duration))
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
		if len(ev.Reasons) > 0 {
			line += " (" + strings.Join(ev.Reasons, "; ") + ")"
		}
	case engine.EventWarning:
		line = "warning: " + ev.Message
	case engine.EventDone:
		switch ev.Status {
		case engine.StatusSucceeded:
			line = fmt.Sprintf("%s: ran in %s", ev.Phase, fmtDuration(ev.Duration))
		case engine.StatusCached:
			line = fmt.Sprintf("%s: cached", ev.Phase)
		case engine.StatusRestored:
			line = fmt.Sprintf("%s: restored", ev.Phase)
		case engine.StatusFailed:
			line = fmt.Sprintf("%s: failed after %s: %v", ev.Phase, fmtDuration(ev.Duration), ev.Err)
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
