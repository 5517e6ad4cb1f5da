package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairn-run/cairn/engine"
)

type planOptions struct {
	gateFlags
	JSON bool
}

func (o *planOptions) AddFlags(f *pflag.FlagSet) {
	o.gateFlags.AddFlags(f)
	f.BoolVar(&o.JSON, "json", false, "print the plan as JSON")
}

func newPlanCommand(g *globals) *cobra.Command {
	var opts planOptions
	cmd := &cobra.Command{
		Use:   "plan [PHASE...]",
		Short: "Show what a run would do for each phase, and why, without running anything",
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPlan(g, opts, args, cmd.OutOrStdout())
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

func runPlan(g *globals, opts planOptions, targets []string, out io.Writer) error {
	_, eng, err := g.openEngine(nil)
	if err != nil {
		return err
	}
	plan, err := eng.Plan(engine.PlanOptions{Targets: targets, Gates: opts.gates()})
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(plan)
	}
	writePlan(out, plan)
	return nil
}

// writePlan renders a plan as aligned text: action, phase, first reason,
// further reasons on their own lines, then the count line.
func writePlan(w io.Writer, plan *engine.PlanResult) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	for _, d := range plan.Decisions {
		first := ""
		if len(d.Reasons) > 0 {
			first = d.Reasons[0]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Action, d.Phase, first)
		for _, r := range d.Reasons[min(1, len(d.Reasons)):] {
			fmt.Fprintf(tw, "\t\t%s\n", r)
		}
	}
	tw.Flush()
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		io.WriteString(w, strings.TrimRight(line, " \n")+strings.Repeat("\n", strings.Count(line, "\n")))
	}
	fmt.Fprintf(w, "\n%d to run, %d cached, %d to restore\n", plan.Run, plan.Cached, plan.Restore)
}
