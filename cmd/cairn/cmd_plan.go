package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairn-run/cairn/cmd/cairn/internal/planfile"
	"github.com/cairn-run/cairn/cmd/cairn/internal/progress"
	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/estimate"
	"github.com/cairn-run/cairn/internal/fsx"
)

type planOptions struct {
	gateFlags
	JSON        bool
	NoEstimates bool
	Out         string
}

func (o *planOptions) AddFlags(f *pflag.FlagSet) {
	o.gateFlags.AddFlags(f)
	f.BoolVar(&o.JSON, "json", false, "print the plan as JSON")
	f.BoolVar(&o.NoEstimates, "no-estimates", false, "leave out the estimates (and the reading of past runs they need)")
	f.StringVar(&o.Out, "out", "", "also save the plan to `FILE` (by convention *"+planfile.Ext+"): cairn run FILE runs exactly it, or refuses if the spec, a variable or an input changed since; sensitive values are never written")
}

// planLong is plan's help: what its columns mean.
const planLong = `Show what a run would do for each phase, and why, without running anything.

Each line is: the action (run, cached, restore), the phase, and for a
phase that will run its estimate, then the reasons:

  run  train["m1"]  ~1.2s  cost 0.3  40 it  param rounds 20 → 40

  ~1.2s    expected duration: the median of the phase's recorded results
           (this workspace's newest runs and the cache's entries under its
           earlier keys, a teammate's included); marked * when borrowed
           from the other instances of its for_each; "unknown" without any
  cost     expected cost reported through $CAIRN_REPORT (when it reported any)
  it       expected iterations (when it reported any)

After the counts, a line totals the estimates with their range (the sums of
the fastest and slowest results), and a warning says when the estimate
exceeds the run's budget { max_cost } or a phase's max_cost, max_iterations
or timeout. --json carries the same figures ("estimate" per phase and in
total, "warnings").

A phase that runs because an upstream phase will also lists its own
changes since its last result.

-out FILE saves the plan: its targets, gates, variable values (never those
of sensitive variables, which must be given again), the spec's digest and
every phase's action and key. cairn run FILE then runs exactly that plan,
or refuses with exit status 2, listing what changed, when the spec, a
variable or an input no longer matches it.`

func newPlanCommand(g *globals) *cobra.Command {
	var opts planOptions
	cmd := &cobra.Command{
		Use:   "plan [PHASE...]",
		Short: "Show what a run would do for each phase, and why, without running anything",
		Long:  planLong,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPlan(g, opts, args, cmd.OutOrStdout())
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

func runPlan(g *globals, opts planOptions, targets []string, out io.Writer) error {
	g.makesState = true // Plan makes .cairn for its memories
	s, eng, err := g.openEngine(nil)
	if err != nil {
		return err
	}
	plan, err := eng.Plan(engine.PlanOptions{Targets: targets, Gates: opts.gates(), Estimate: !opts.NoEstimates})
	if err != nil {
		return err
	}
	if opts.Out != "" {
		data, err := planfile.Encode(planfile.New(s, targets, opts.gates(), plan), s, os.LookupEnv)
		if err != nil {
			return fmt.Errorf("plan -out %s: %w", opts.Out, err)
		}
		if err := fsx.WriteFileAtomic(opts.Out, data, 0o644, "planfile", true, true); err != nil {
			return fmt.Errorf("plan -out: %w", err)
		}
	}
	if opts.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(plan)
	}
	writePlan(out, plan)
	if opts.Out != "" {
		fmt.Fprintf(out, "Saved the plan to %s: cairn run %s runs exactly it.\n", opts.Out, opts.Out)
	}
	return nil
}

// writePlan renders a plan as aligned text: action, phase, first reason,
// further reasons on their own lines, then the count line. The columns
// are those text/tabwriter makes (each as wide as its widest cell, in
// runes, plus two spaces; trailing spaces trimmed), laid out directly:
// tabwriter took a tenth of a second over a sweep of 100,000 instances.
// Text holding a tab or another character tabwriter treats as a cell or
// line break, or its Escape byte, goes through tabwriter itself, so the
// bytes never differ.
func writePlan(w io.Writer, plan *engine.PlanResult) {
	if planHasBreaks(plan) {
		writePlanTabwriter(w, plan)
		return
	}
	aw, pw := 0, 0
	for _, d := range plan.Decisions {
		aw = max(aw, utf8.RuneCountInString(string(d.Action)))
		pw = max(pw, utf8.RuneCountInString(d.Phase))
	}
	aw, pw = aw+2, pw+2
	cells := planEstimateCells(plan)
	var ew []int
	if len(cells) > 0 {
		ew = make([]int, len(cells[0]))
		for _, row := range cells {
			for j, c := range row {
				ew[j] = max(ew[j], utf8.RuneCountInString(c)+2)
			}
		}
	}
	lead := aw + pw
	for _, w := range ew {
		lead += w
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var line []byte
	pad := func(n int) {
		for range n {
			line = append(line, ' ')
		}
	}
	flush := func() {
		bw.Write(bytes.TrimRight(line, " "))
		bw.WriteByte('\n')
		line = line[:0]
	}
	for i, d := range plan.Decisions {
		line = append(line, d.Action...)
		pad(aw - utf8.RuneCountInString(string(d.Action)))
		line = append(line, d.Phase...)
		pad(pw - utf8.RuneCountInString(d.Phase))
		for j, w := range ew {
			line = append(line, cells[i][j]...)
			pad(w - utf8.RuneCountInString(cells[i][j]))
		}
		if len(d.Reasons) > 0 {
			line = append(line, d.Reasons[0]...)
		}
		flush()
		for _, r := range d.Reasons[min(1, len(d.Reasons)):] {
			pad(lead)
			line = append(line, r...)
			flush()
		}
	}
	writePlanFooter(bw, plan)
	bw.Flush()
}

// planHasBreaks reports whether any text of plan holds a character that
// text/tabwriter reads as a cell or line break, or its Escape byte 0xff
// (a file name that is not UTF-8), which brackets text that is neither.
func planHasBreaks(plan *engine.PlanResult) bool {
	breaks := func(s string) bool {
		return strings.ContainsAny(s, "\t\v\f\n\r") || strings.IndexByte(s, tabwriter.Escape) >= 0
	}
	for _, d := range plan.Decisions {
		if breaks(string(d.Action)) || breaks(d.Phase) {
			return true
		}
		for _, r := range d.Reasons {
			if breaks(r) {
				return true
			}
		}
	}
	return false
}

// writePlanTabwriter is writePlan through text/tabwriter.
func writePlanTabwriter(w io.Writer, plan *engine.PlanResult) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	cells := planEstimateCells(plan)
	for i, d := range plan.Decisions {
		first := ""
		if len(d.Reasons) > 0 {
			first = d.Reasons[0]
		}
		est, blank := "", ""
		if cells != nil {
			est = strings.Join(cells[i], "\t") + "\t"
			blank = strings.Repeat("\t", len(cells[i]))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s%s\n", d.Action, d.Phase, est, first)
		for _, r := range d.Reasons[min(1, len(d.Reasons)):] {
			fmt.Fprintf(tw, "\t\t%s%s\n", blank, r)
		}
	}
	tw.Flush()
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		io.WriteString(w, strings.TrimRight(line, " \n")+strings.Repeat("\n", strings.Count(line, "\n")))
	}
	writePlanFooter(w, plan)
}

// planEstimateCells returns the estimate columns of each decision (empty
// for phases that do not run), without the columns empty in every row;
// nil when no phase has an estimate (none runs, or --no-estimates).
func planEstimateCells(plan *engine.PlanResult) [][]string {
	all := make([][3]string, len(plan.Decisions))
	var used [3]bool
	for i, d := range plan.Decisions {
		if d.Estimate == nil {
			continue
		}
		all[i] = progress.EstimateCells(d.Estimate)
		for j, c := range all[i] {
			used[j] = used[j] || c != ""
		}
	}
	if !used[0] {
		return nil
	}
	out := make([][]string, len(all))
	for i, row := range all {
		for j, c := range row {
			if used[j] {
				out[i] = append(out[i], c)
			}
		}
	}
	return out
}

// writePlanFooter writes the count line, the estimate's totals and the
// budget warnings.
func writePlanFooter(w io.Writer, plan *engine.PlanResult) {
	fmt.Fprintf(w, "\n%d to run, %d cached, %d to restore\n", plan.Run, plan.Cached, plan.Restore)
	if plan.Estimate == nil || plan.Run == 0 {
		return
	}
	io.WriteString(w, progress.EstimateLine(plan.Estimate)+"\n")
	for _, d := range plan.Decisions {
		if d.Estimate != nil && d.Estimate.Source == estimate.Siblings {
			io.WriteString(w, "* borrowed from the other instances of its for_each, having no result of its own\n")
			break
		}
	}
	for _, warn := range plan.Warnings {
		io.WriteString(w, "warning: "+warn+"\n")
	}
}
