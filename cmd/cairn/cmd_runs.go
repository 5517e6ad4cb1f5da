package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/cmd/cairn/internal/history"
	"github.com/cairn-run/cairn/cmd/cairn/internal/progress"
	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/outputs"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
	specmemo "github.com/cairn-run/cairn/spec/memo"
	"github.com/cairn-run/cairn/workspace"
)

// runFromArgs returns the workspace and the run named by args[0] (an id
// or a unique prefix), or its latest run when args is empty.
func (g *globals) runFromArgs(args []string) (workspace.Workspace, *runrec.RunState, error) {
	ws, err := g.workspace()
	if err != nil {
		return ws, nil, err
	}
	id := ""
	if len(args) > 0 {
		id = args[0]
	}
	st, err := ws.Records().FindRun(id)
	return ws, st, err
}

// workspace returns the workspace of the spec named by -f, without
// loading the spec: run records stay readable when the spec is broken.
func (g *globals) workspace() (workspace.Workspace, error) {
	abs, err := filepath.Abs(g.File)
	if err != nil {
		return workspace.Workspace{}, err
	}
	return workspace.Workspace{Root: filepath.Dir(abs)}, nil
}

// looseCache opens the cache for commands that do not need the spec: the
// spec's cache.dir is used when the spec loads, and ignored when it does
// not.
func (g *globals) looseCache() (*remote.Tiered, error) {
	s := g.looseSpec()
	dir, err := g.cacheDir(s)
	if err != nil {
		return nil, err
	}
	return g.openCache(dir, s)
}

// looseSpec loads the spec if it loads, for its cache settings; nil if it
// does not.
func (g *globals) looseSpec() *spec.Spec {
	if _, err := os.Stat(g.File); err != nil {
		return nil
	}
	// With -var and -var-file as given, as run takes them: a cache.dir
	// made from a variable names the same cache here.
	opts, err := g.specOptions()
	if err != nil {
		return nil
	}
	// The spec's memo when it is good for these options (parsing a large
	// spec only for its cache settings would dwarf the command); never
	// written from here, so that a load with other options cannot
	// replace the memo a run made.
	if sp := specmemo.Load(g.File, opts, specMemoPath(g.File)); sp != nil {
		return sp
	}
	p := spec.NewParser()
	sp, diags := p.LoadFile(g.File, opts)
	if diags.HasErrors() {
		return nil
	}
	return sp
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newResumeCommand(g *globals) *cobra.Command {
	var prog progressOptions
	var jobs int
	var executor string
	cmd := &cobra.Command{
		Use:   "resume [RUN]",
		Short: "Run a stopped, failed or interrupted run again with its targets and flags",
		Long: `Run a run again with the targets, flags and -var values it was started with
(default: the latest run). The phases it finished are not run again, even if
it was started with --from or --force: only what was left runs. Spending
carries over: the new run's budget ledger starts from what the resumed run
spent. -var given here overrides the recorded values; edit the
spec to raise a budget.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := prog.check(); err != nil {
				return err
			}
			ws, err := g.workspace()
			if err != nil {
				return err
			}
			id := ""
			if len(args) > 0 {
				id = args[0]
			}
			prev, err := ws.Records().FindRun(id)
			if err != nil {
				return nothingToResume(ws, err)
			}
			if id == "" && prev.Status == runrec.RunSucceeded {
				return nothingToResume(ws, fmt.Errorf("nothing to resume: the latest run %s succeeded", prev.RunID))
			}
			if prev.Status == runrec.RunRunning {
				return fmt.Errorf("run %s is still running (pid %d on %s); cairn stop stops it", prev.RunID, prev.PID, prev.Host)
			}
			req := prev.Request
			// Recorded -var values first, so that those given now win.
			g.Vars = append(append([]string{}, req.Vars...), g.Vars...)
			req.Vars = g.Vars
			g.VarFiles = append(append([]string{}, req.VarFiles...), g.VarFiles...)
			req.VarFiles = g.VarFiles
			if jobs > 0 {
				req.Jobs = jobs
			}
			if err := checkExecutor(executor); err != nil {
				return err
			}
			if executor != "" {
				req.Executor = executor
			}
			return runRun(cmd.Context(), g, engine.RunOptions{Request: req, ResumeOf: prev.RunID}, prog, cmd.OutOrStdout())
		},
	}
	prog.AddFlags(cmd.Flags())
	cmd.Flags().IntVarP(&jobs, "jobs", "j", 0, "run or restore up to `N` phases at once (default: as the resumed run); cached phases are checked meanwhile")
	cmd.Flags().StringVar(&executor, "executor", "", "run every phase on `EXECUTOR` ("+executorList()+"; default: as the resumed run)")
	return cmd
}

// nothingToResume wraps err with the list of runs.
func nothingToResume(ws workspace.Workspace, err error) error {
	var unknown *runrec.UnknownRunError
	if errors.As(err, &unknown) || errors.Is(err, runrec.ErrDamagedState) {
		return err
	}
	var runs []*runrec.RunState // the newest ten, newest first
	_ = ws.Records().RunsNewestFirst(func(st *runrec.RunState) bool {
		runs = append(runs, st)
		return len(runs) < 10
	})
	if len(runs) == 0 {
		return fmt.Errorf("nothing to resume: %w; start one with cairn run", err)
	}
	var b strings.Builder
	b.WriteString(err.Error())
	b.WriteString("\nruns (cairn resume RUN picks one):")
	for i := len(runs) - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "\n  %s  %s", runs[i].RunID, runs[i].Status)
	}
	return errors.New(b.String())
}

func newStopCommand(g *globals) *cobra.Command {
	var cancel bool
	cmd := &cobra.Command{
		Use:   "stop [RUN]",
		Short: "Ask a running run to stop: no new phase starts, running phases finish and are cached",
		Long: `Ask a running run to stop: no new phase starts, running phases finish and
are cached. With --cancel, running phases are ended too (their Slurm jobs
cancelled with scancel), as a second Ctrl-C does; when the run's cairn
process is gone, --cancel cancels the Slurm jobs it left behind.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := g.workspace()
			if err != nil {
				return err
			}
			id := ws.CurrentRun()
			if len(args) > 0 {
				st, err := ws.Records().FindRun(args[0])
				if err != nil {
					return err
				}
				id = st.RunID
			}
			if cancel {
				if id == "" || !ws.IsRunning(id) {
					return cancelLeftJobs(cmd, g, ws, args)
				}
				if err := ws.RequestCancel(id); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "asked run %s to stop and end its running phases (Slurm jobs are cancelled)\n", id)
				return nil
			}
			if id == "" {
				return errors.New("no run in progress in this workspace")
			}
			if err := ws.RequestStop(id); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "asked run %s to stop: no new phase starts; running phases finish and are cached\n", id)
			return nil
		},
	}
	cmd.Flags().BoolVar(&cancel, "cancel", false, "end running phases too: cancel their Slurm jobs")
	return cmd
}

// counts tallies a run's phase statuses.
func counts(st *runrec.RunState) map[string]int {
	c := map[string]int{}
	for _, ps := range st.Phases {
		c[ps.Status]++
	}
	return c
}

func countLine(c map[string]int) string {
	order := []string{runrec.StatusSucceeded, runrec.StatusCached, runrec.StatusRestored, runrec.StatusRunning, runrec.StatusPending,
		runrec.StatusFailed, runrec.StatusTimedOut, runrec.StatusOverBudget, runrec.StatusBlocked, runrec.StatusSkipped, runrec.StatusStopped}
	var parts []string
	for _, s := range order {
		if c[s] > 0 {
			name := s
			if s == runrec.StatusSucceeded {
				name = "ran"
			}
			parts = append(parts, fmt.Sprintf("%d %s", c[s], strings.ReplaceAll(name, "_", " ")))
		}
	}
	return strings.Join(parts, ", ")
}

func newStatusCommand(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the run in progress, or the latest run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := g.workspace()
			if err != nil {
				return err
			}
			st, err := ws.Records().FindRun(ws.CurrentRun())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), st)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "run %s: %s", st.RunID, st.Status)
			if st.StopReason != "" {
				fmt.Fprintf(out, " (%s)", st.StopReason)
			}
			fmt.Fprintf(out, ", started %s, %s\n", st.Started.Local().Format("2006-01-02 15:04:05"), progress.FormatDuration(history.RunDuration(st)))
			fmt.Fprintf(out, "%d phases: %s\n", len(st.Phases), countLine(counts(st)))
			if t := st.Total(); t != (runrec.Spend{}) || st.MaxCost != nil {
				line := "spent " + progress.FormatSpend(t)
				if st.MaxCost != nil {
					line += fmt.Sprintf(" of budget %s", runrec.FormatCost(*st.MaxCost))
				}
				fmt.Fprintln(out, line)
			}
			var running []string
			for addr, ps := range st.Phases {
				if ps.Status == runrec.StatusRunning {
					running = append(running, addr)
				}
			}
			sort.Strings(running)
			for _, a := range running {
				ps := st.Phases[a]
				line := "  running " + a
				if ps.Started != nil {
					line += " for " + progress.FormatDuration(time.Since(*ps.Started))
				}
				if ps.JobID != "" {
					line += fmt.Sprintf(" (%s job %s)", ps.Executor, ps.JobID)
				}
				fmt.Fprintln(out, line)
			}
			switch st.Status {
			case runrec.RunInterrupted, runrec.RunStopped, runrec.RunFailed:
				fmt.Fprintln(out, "cairn resume continues it")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run record as JSON")
	return cmd
}

func newRunsCommand(g *globals) *cobra.Command {
	var asJSON bool
	var last int
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the runs of this workspace",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := g.workspace()
			if err != nil {
				return err
			}
			if last < 0 {
				return usageError{errors.New("--last must be 0 (every run) or more")}
			}
			var runs []*runrec.RunState
			var damaged []error
			if last > 0 {
				// The newest ones only, read newest first: a workspace of
				// hundreds of runs need not be read whole.
				err = ws.Records().RunsNewestFirst(func(st *runrec.RunState) bool {
					runs = append(runs, st)
					return len(runs) < last
				})
				slices.Reverse(runs)
			} else {
				runs, damaged, err = ws.Records().RunsAndDamaged()
			}
			if err != nil {
				return err
			}
			for _, derr := range damaged {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", derr)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				type row struct {
					RunID      string         `json:"run_id"`
					Started    time.Time      `json:"started"`
					Status     string         `json:"status"`
					DurationMS int64          `json:"duration_ms"`
					Counts     map[string]int `json:"counts"`
					Cost       float64        `json:"cost"`
					Iterations int64          `json:"iterations"`
					Targets    []string       `json:"targets"`
				}
				rows := []row{}
				for _, r := range runs {
					t := r.Total()
					rows = append(rows, row{r.RunID, r.Started, r.Status, history.RunDuration(r).Milliseconds(), counts(r), t.Cost, t.Iterations, r.Request.Targets})
				}
				return writeJSON(out, rows)
			}
			if len(runs) == 0 {
				fmt.Fprintln(out, "no runs yet")
				return nil
			}
			var buf bytes.Buffer
			tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTARTED\tSTATUS\tDURATION\tRAN\tCACHED\tSPENT")
			for _, r := range runs {
				c := counts(r)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.RunID, r.Started.Local().Format("2006-01-02 15:04:05"), r.Status,
					progress.FormatDuration(history.RunDuration(r)), c[runrec.StatusSucceeded], c[runrec.StatusCached]+c[runrec.StatusRestored], runrec.FormatCost(r.Total().Cost))
			}
			tw.Flush()
			writeTrimmed(out, buf.String())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as JSON")
	cmd.Flags().IntVarP(&last, "last", "n", 0, "list only the newest N runs (0: every run)")
	var keep int
	prune := &cobra.Command{
		Use:   "prune --keep N",
		Short: "Remove the records of all but the newest N runs (never the cache)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if keep < 0 {
				return usageError{errors.New("--keep must be 0 or more")}
			}
			ws, err := g.workspace()
			if err != nil {
				return err
			}
			removed, err := ws.Records().Prune(keep)
			fmt.Fprintf(cmd.OutOrStdout(), "removed %d run records\n", len(removed))
			return err
		},
	}
	prune.Flags().IntVar(&keep, "keep", -1, "keep the newest `N` runs")
	_ = prune.MarkFlagRequired("keep")
	cmd.AddCommand(prune)
	return cmd
}

// writeTrimmed writes tabwriter output without trailing spaces.
func writeTrimmed(w io.Writer, s string) {
	for _, line := range strings.SplitAfter(s, "\n") {
		if line == "" {
			continue
		}
		io.WriteString(w, strings.TrimRight(line, " \n")+"\n")
	}
}

func newShowCommand(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [RUN]",
		Short: "Show the phases of a run (default: the latest)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, st, err := g.runFromArgs(args)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, st)
			}
			fmt.Fprintf(out, "run %s: %s, %s, %d phases: %s\n", st.RunID, st.Status, progress.FormatDuration(history.RunDuration(st)), len(st.Phases), countLine(counts(st)))
			addrs := showOrder(st, g.looseSpec())
			var buf bytes.Buffer
			tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "PHASE\tSTATUS\tATTEMPTS\tDURATION\tCOST\tNOTE")
			for _, a := range addrs {
				ps := st.Phases[a]
				dur := ""
				if ps.DurationMS > 0 {
					dur = progress.FormatDuration(time.Duration(ps.DurationMS) * time.Millisecond)
				}
				cost := ""
				if ps.Cost > 0 {
					cost = runrec.FormatCost(ps.Cost)
				}
				att := ""
				if ps.Attempts > 0 {
					att = fmt.Sprint(ps.Attempts)
				}
				note := ps.Error
				if note == "" {
					note = ps.Warning
				}
				if note == "" && len(ps.Reasons) > 0 {
					note = strings.Join(ps.Reasons, "; ")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a, ps.Status, att, dur, cost, firstLine(note))
			}
			tw.Flush()
			writeTrimmed(out, buf.String())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run record as JSON")
	return cmd
}

// showOrder lists the run's phases in the spec's graph order, as plan
// does, when the spec loads; phases the spec no longer has (or all, when
// it does not load) follow in name order.
func showOrder(st *runrec.RunState, sp *spec.Spec) []string {
	addrs := make([]string, 0, len(st.Phases))
	seen := make(map[string]bool, len(st.Phases))
	if sp != nil && sp.Graph != nil {
		if order, err := sp.Graph.TopoOrder(); err == nil {
			for _, a := range order {
				if _, ok := st.Phases[a]; ok && !seen[a] {
					addrs = append(addrs, a)
					seen[a] = true
				}
			}
		}
	}
	rest := make([]string, 0, len(st.Phases)-len(addrs))
	for a := range st.Phases {
		if !seen[a] {
			rest = append(rest, a)
		}
	}
	sort.Strings(rest)
	return append(addrs, rest...)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func newLogsCommand(g *globals) *cobra.Command {
	var runID string
	var follow, onlyOut, onlyErr bool
	cmd := &cobra.Command{
		Use:   "logs PHASE",
		Short: "Print a phase's logs from the latest run that ran it (or --run RUN)",
		Long: `Print a phase's logs from the latest run that ran it (or --run RUN). PHASE is
an address, or a declared output path standing for the phase instance that
declares it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := g.workspace()
			if err != nil {
				return err
			}
			ctx := g.watchContext(cmd.Context())
			phase := args[0]
			if looksLikeOutput(phase) {
				if phase, err = logsTarget(g, phase); err != nil {
					return err
				}
			}
			err = runLogs(ctx, g, ws, phase, runID, follow, !onlyErr, !onlyOut, cmd.OutOrStdout())
			if spec.IsUnknownPhase(err) && phase == args[0] {
				// A directory output named like a phase ("results").
				if owner, oerr := logsTarget(g, phase); oerr == nil && owner != phase {
					return runLogs(ctx, g, ws, owner, runID, follow, !onlyErr, !onlyOut, cmd.OutOrStdout())
				}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&runID, "run", "", "read the logs of run `RUN`")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep printing as the phase writes, until it ends (-f after logs means --follow)")
	cmd.Flags().BoolVar(&onlyOut, "stdout", false, "print only stdout")
	cmd.Flags().BoolVar(&onlyErr, "stderr", false, "print only stderr")
	return cmd
}

// looksLikeOutput reports whether a logs target is meant as a path:
// phase names hold neither dots nor slashes, and instance addresses have
// brackets.
func looksLikeOutput(arg string) bool {
	return strings.ContainsAny(arg, "/.") && !strings.Contains(arg, "[")
}

// logsTarget is the address of the phase instance declaring the output
// path arg, or arg itself when arg is a phase's address or the spec does
// not load (logs of past runs are readable whatever the spec is now). A
// path no phase declares is an UnknownPhaseError.
func logsTarget(g *globals, arg string) (string, error) {
	s, err := g.loadSpec()
	if err != nil || s.Phase(arg) != nil {
		return arg, nil
	}
	if owner, ok := s.OutputOwner(arg); ok {
		return owner, nil
	}
	return arg, spec.UnknownTarget(s, arg)
}

func runLogs(ctx context.Context, g *globals, ws workspace.Workspace, phase, runID string, follow, wantOut, wantErr bool, out io.Writer) error {
	var st *runrec.RunState
	if runID != "" {
		s, err := ws.Records().FindRun(runID)
		if err != nil {
			return err
		}
		st = s
	} else {
		// The latest run in which the phase ran or was found cached,
		// reading records newest first only until it is found.
		var latest *runrec.RunState
		err := ws.Records().RunsNewestFirst(func(r *runrec.RunState) bool {
			if latest == nil {
				latest = r
			}
			if ps := r.Phases[phase]; ps != nil && (ps.Stdout != "" || ps.Key != "" && ps.Status != runrec.StatusPending) {
				st = r
			}
			return st == nil
		})
		if err != nil {
			return err
		}
		if st == nil {
			if latest == nil {
				return runrec.ErrNoRuns
			}
			if latest.Phases[phase] == nil {
				return &spec.UnknownPhaseError{Name: phase, Valid: sortedKeys(latest.Phases)}
			}
			return fmt.Errorf("phase %s has no logs in any recorded run: it has not run yet", phase)
		}
	}
	ps := st.Phases[phase]
	if ps == nil {
		return &spec.UnknownPhaseError{Name: phase, Valid: sortedKeys(st.Phases)}
	}
	var files []string
	if wantOut {
		files = append(files, ps.Stdout)
	}
	if wantErr {
		files = append(files, ps.Stderr)
	}
	if ps.Stdout == "" {
		// Cached in that run: the logs are those of the run that produced
		// the result, kept in the cache.
		return cachedLogs(g, ps, wantOut, wantErr, out)
	}
	if !follow {
		for i, f := range files {
			b, err := os.ReadFile(ws.Abs(f))
			if err != nil {
				return err
			}
			if len(files) > 1 && len(b) > 0 {
				fmt.Fprintf(out, "==> %s <==\n", f)
			}
			out.Write(b)
			if len(files) > 1 && i == 0 && len(b) > 0 && b[len(b)-1] != '\n' {
				fmt.Fprintln(out)
			}
		}
		return nil
	}
	return followLogs(ctx, ws, st.RunID, phase, files, out)
}

func cachedLogs(g *globals, ps *runrec.PhaseState, wantOut, wantErr bool, out io.Writer) error {
	c, err := g.looseCache()
	if err != nil {
		return err
	}
	key, err := cache.ParseActionID(ps.Key)
	if err != nil {
		return fmt.Errorf("no logs: the phase was %s", ps.Status)
	}
	e, err := c.GetEntry(key)
	if err != nil {
		return fmt.Errorf("the phase was %s and its cached result is gone: %w", ps.Status, err)
	}
	for _, d := range []struct {
		want bool
		d    cache.Digest
	}{{wantOut, e.Stdout}, {wantErr, e.Stderr}} {
		if !d.want || d.d.IsZero() {
			continue
		}
		b, err := c.ReadEntryBlob(e, d.d)
		if err != nil {
			return err
		}
		out.Write(b)
	}
	return nil
}

// followLogs prints the files as they grow until the phase is no longer
// running in the run's record.
func followLogs(ctx context.Context, ws workspace.Workspace, runID, phase string, files []string, out io.Writer) error {
	offs := make([]int64, len(files))
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		for i, f := range files {
			fh, err := os.Open(ws.Abs(f))
			if err != nil {
				continue
			}
			if _, err := fh.Seek(offs[i], io.SeekStart); err == nil {
				n, _ := io.Copy(out, fh)
				offs[i] += n
			}
			fh.Close()
		}
		st, err := runrec.ReadState(ws.Records().StatePath(runID))
		if err != nil {
			return err
		}
		if ps := st.Phases[phase]; ps == nil || ps.Status != runrec.StatusRunning || st.Status != runrec.RunRunning {
			// One last read happened above, after the phase ended.
			if ps != nil && ps.Status == runrec.StatusRunning {
				continue
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func newCheckoutCommand(g *globals) *cobra.Command {
	var runID string
	cmd := &cobra.Command{
		Use:   "checkout [--run RUN]",
		Short: "Restore the outputs of the latest (or a given) run from the cache, running nothing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := g.workspace()
			if err != nil {
				return err
			}
			st, err := ws.Records().FindRun(runID)
			if err != nil {
				return err
			}
			c, err := g.looseCache()
			if err != nil {
				return err
			}
			res, err := outputs.Checkout(ws, c, st)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, a := range res.Restored {
				fmt.Fprintf(out, "%s: restored\n", a)
			}
			fmt.Fprintf(out, "checked out run %s: %s restored, %d already in place", st.RunID, progress.Plural(len(res.Restored), "phase"), res.UpToDate)
			if len(res.NotCached) > 0 {
				fmt.Fprintf(out, ", %d not in the cache (%s)", len(res.NotCached), strings.Join(res.NotCached, ", "))
			}
			fmt.Fprintln(out)
			if len(res.NotCached) > 0 {
				return &exitError{code: exitFailed, msg: "some results are no longer in the cache; cairn run rebuilds them"}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&runID, "run", "", "restore the outputs of run `RUN` (default: the latest)")
	return cmd
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
