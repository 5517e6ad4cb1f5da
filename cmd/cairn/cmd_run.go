package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairn-run/cairn/cmd/cairn/internal/planfile"
	"github.com/cairn-run/cairn/cmd/cairn/internal/progress"
	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/runrec"
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

func (o *gateFlags) gates() runrec.Gates {
	return runrec.Gates{Force: o.Force, From: o.From, Until: o.Until, Only: o.Only}
}

// progressOptions are the output flags run and resume share.
type progressOptions struct {
	JSON    bool
	Quiet   bool
	Verbose bool
}

func (o *progressOptions) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.JSON, "json", false, "print progress as JSON lines, one event per line")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "print only errors, warnings and the closing line")
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "also print what phases write, each line prefixed with [PHASE]")
}

func (o *progressOptions) check() error {
	switch {
	case o.Quiet && o.Verbose:
		return usageError{fmt.Errorf("-q and -v cannot be used together")}
	case o.JSON && (o.Quiet || o.Verbose):
		return usageError{fmt.Errorf("--json cannot be used with -q or -v")}
	}
	return nil
}

type runOptions struct {
	gateFlags
	Jobs      int
	KeepGoing bool
	DryRun    bool
	Executor  string
	progressOptions
}

func (o *runOptions) AddFlags(f *pflag.FlagSet) {
	o.gateFlags.AddFlags(f)
	f.IntVarP(&o.Jobs, "jobs", "j", 0, "run or restore up to `N` phases at once (default: the spec's concurrency, else the number of CPUs); cached phases are checked meanwhile")
	f.BoolVar(&o.KeepGoing, "keep-going", false, "keep running independent phases after a phase failed")
	f.BoolVar(&o.DryRun, "dry-run", false, "show what would run, like plan, and run nothing")
	f.StringVar(&o.Executor, "executor", "", "run every phase on `EXECUTOR` ("+executorList()+"), whatever the spec says")
	o.progressOptions.AddFlags(f)
}

func newRunCommand(g *globals) *cobra.Command {
	var opts runOptions
	cmd := &cobra.Command{
		Use:   "run [PHASE...]",
		Short: "Run phases (default: all) and what they need, skipping what is cached",
		Long: `Run the named phases (default: all) and what they need, skipping what is cached.

The first Ctrl-C (or cairn stop from another shell) starts no new phase and
lets running phases finish and be cached; a second Ctrl-C (or cairn stop
--cancel) terminates them (SIGTERM to each phase's process group, SIGKILL
5 s later; a third Ctrl-C sends SIGKILL at once) and cancels their Slurm
jobs.
cairn resume continues a stopped or failed run.

cairn run FILE, where FILE is a plan saved by cairn plan -out (it starts
with the line "cairn-plan 1"; by convention it is named *.cairnplan), runs
exactly that plan: its targets, gates and variable values. Sensitive
variables must be given again (-var, -var-file or CAIRN_VAR_NAME). If the
spec, a variable or an input changed since the plan was made, so that a
phase would be decided otherwise or get another key, nothing runs: cairn
lists what changed and exits 2.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if ok, err := planfile.Is(args[0]); err != nil {
					return usageError{err}
				} else if ok {
					return applyPlan(cmd, g, opts, args[0])
				}
			}
			if opts.DryRun {
				return runPlan(g, planOptions{JSON: opts.JSON, gateFlags: opts.gateFlags}, args, cmd.OutOrStdout())
			}
			req := runrec.Request{
				Targets:   args,
				Gates:     opts.gates(),
				Jobs:      opts.Jobs,
				KeepGoing: opts.KeepGoing,
				Vars:      g.Vars,
				VarFiles:  g.VarFiles,
				Executor:  opts.Executor,
			}
			if err := checkExecutor(opts.Executor); err != nil {
				return err
			}
			return runRun(cmd.Context(), g, engine.RunOptions{Request: req}, opts.progressOptions, cmd.OutOrStdout())
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

// runRun runs the engine. Until it has the engine open (the spec read),
// a signal ends cairn at once (see globals.starting); from then on the
// first one stops the run gracefully and the second cancels ctx.
func runRun(ctx context.Context, g *globals, ro engine.RunOptions, po progressOptions, out io.Writer) error {
	g.starting.Store(true)
	if err := po.check(); err != nil {
		return err
	}
	view := progress.New(out, progress.Options{JSON: po.JSON, Quiet: po.Quiet, Verbose: po.Verbose})
	var res *engine.RunResult
	// The view is closed however the run ends, so that a terminal is left
	// with its cursor shown and no half-drawn line.
	defer func() { view.Close(res) }()
	g.makesState = true // the run makes .cairn for its record
	s, eng, err := g.openEngine(view)
	if err != nil {
		return err
	}
	// Warnings written to stderr (the cache's, the remote's) print above
	// a live display rather than through it.
	stderr := g.stderr
	g.stderr = view.Above(stderr)
	defer func() { g.stderr = stderr }()
	// Values of sensitive variables are not written to state.json: a
	// resumed run needs them given again.
	ro.Vars = dropSensitive(ro.Vars, s.SensitiveVars)
	ro.Stop = g.graceful()
	if po.Verbose {
		ro.PhaseOutput = view.PhaseOutput
	}
	res, err = eng.Run(ctx, ro)
	if res == nil {
		return err
	}
	if err != nil {
		return err
	}
	switch res.Status {
	case runrec.RunStopped:
		return &exitError{code: exitStopped, msg: fmt.Sprintf("run %s stopped (%s); finished phases are cached: cairn resume continues it", res.RunID, res.StopReason)}
	case runrec.RunFailed:
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
			fmt.Fprintf(&b, "run budget spent (%s): %s not started; raise budget.max_cost and run cairn resume to continue", progress.FormatSpend(res.Spent), progress.Plural(res.BudgetSkipped, "phase"))
		}
		return &exitError{code: exitFailed, msg: b.String()}
	}
	return nil
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

// applyPlan runs the plan saved at path (cairn plan -out): it plans again
// with the saved targets, gates and variable values and runs only if every
// phase is decided as saved, with the same key.
func applyPlan(cmd *cobra.Command, g *globals, opts runOptions, path string) error {
	if len(opts.Force)+len(opts.From)+len(opts.Until)+len(opts.Only) > 0 || opts.DryRun {
		return usageError{fmt.Errorf("run %s: a saved plan holds its own targets and gates: --force, --from, --until, --only and --dry-run cannot be given with it (cairn plan them again with -out)", path)}
	}
	if err := checkExecutor(opts.Executor); err != nil {
		return err
	}
	sp, err := planfile.Read(path)
	if err != nil {
		return usageError{err}
	}
	if f := cmd.Flag("file"); f == nil || !f.Changed {
		g.File = sp.Spec
	}
	g.planVars = map[string]string{}
	var vars []string
	for _, name := range sortedKeys(sp.Variables) {
		g.planVars[name] = sp.Variables[name]
		vars = append(vars, name+"="+sp.Variables[name])
	}
	if err := checkSavedPlan(g, sp, path); err != nil {
		return err
	}
	req := runrec.Request{
		Targets:   sp.Targets,
		Gates:     sp.Gates,
		Jobs:      opts.Jobs,
		KeepGoing: opts.KeepGoing,
		// Recorded for resume, which gives them as -var: the plan's
		// values, then those given here (sensitive ones are dropped).
		Vars:     append(vars, g.Vars...),
		VarFiles: g.VarFiles,
		Executor: opts.Executor,
	}
	return runRun(cmd.Context(), g, engine.RunOptions{Request: req}, opts.progressOptions, cmd.OutOrStdout())
}

// checkSavedPlan plans again as sp was planned and returns an error (exit
// status 2) listing every difference, or nil when there is none.
func checkSavedPlan(g *globals, sp *planfile.Plan, path string) error {
	g.makesState = true
	s, eng, err := g.openEngine(nil)
	if err != nil {
		return err
	}
	plan, err := eng.Plan(engine.PlanOptions{Targets: sp.Targets, Gates: sp.Gates})
	if err != nil {
		return err
	}
	changed := planfile.Staleness(sp, s, plan, eng.DiffComponents)
	if len(changed) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "saved plan %s no longer matches; nothing ran. What changed since it was made:", path)
	for _, c := range changed {
		b.WriteString("\n  ")
		b.WriteString(c)
	}
	fmt.Fprintf(&b, "\nReview a new plan: cairn plan -out %s", path)
	return &exitError{code: exitUsage, msg: b.String()}
}
