package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairn-run/cairn/dag"
	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

type graphOptions struct {
	Format string
	Status bool
	Run    string
}

func (o *graphOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Format, "format", "dot", "print the graph as `FORMAT`: dot, mermaid or json")
	f.BoolVar(&o.Status, "status", false, "colour each phase by what a run would do now: run, cached or restore")
	f.StringVar(&o.Run, "run", "", "colour each phase by what run `RUN` did (a run id, a unique prefix of one, or latest)")
}

// graphFormats are the writers of --format.
var graphFormats = map[string]func(io.Writer, *dag.Graph, dag.Drawing) error{
	"dot": func(w io.Writer, g *dag.Graph, d dag.Drawing) error {
		return dag.WriteDOT(w, g, d.DOTOptions(g))
	},
	"mermaid": dag.WriteMermaid,
	"json":    dag.WriteJSON,
}

// statusColors are the statuses cairn graph colours by, in legend order:
// first those of a plan (run, cached, restore), then those of a run record
// in the order cairn show counts them.
var statusColors = []dag.StatusStyle{
	{Name: string(engine.ActionRun), Fill: "#ffe08a"},
	{Name: runrec.StatusSucceeded, Fill: "#7fd17f"},
	{Name: runrec.StatusCached, Fill: "#c3ecc3"},
	{Name: string(engine.ActionRestore), Fill: "#a8d8ff"},
	{Name: runrec.StatusRestored, Fill: "#a8d8ff"},
	{Name: runrec.StatusRunning, Fill: "#ffe08a"},
	{Name: runrec.StatusPending, Fill: "#f0f0f0"},
	{Name: runrec.StatusFailed, Fill: "#ff8a80"},
	{Name: runrec.StatusTimedOut, Fill: "#ffb870"},
	{Name: runrec.StatusOverBudget, Fill: "#e3a8ff"},
	{Name: runrec.StatusBlocked, Fill: "#c8c8c8"},
	{Name: runrec.StatusSkipped, Fill: "#e8e8e8"},
	{Name: runrec.StatusStopped, Fill: "#d7c4b0"},
}

func newGraphCommand(g *globals) *cobra.Command {
	var opts graphOptions
	cmd := &cobra.Command{
		Use:   "graph [TARGET...]",
		Short: "Print the phase graph as Graphviz DOT (pipe it to dot -Tsvg), Mermaid or JSON",
		Long: `Print the phase graph: an edge A -> B means B needs A. The instances of a
phase with for_each are drawn together (a DOT cluster, a Mermaid subgraph, a
JSON "group"). Output is sorted, so the same spec always prints the same bytes.

  --format dot      Graphviz DOT, the default: cairn graph | dot -Tsvg > graph.svg
  --format mermaid  a Mermaid flowchart, for Markdown; phase names are labels of
                    generated node ids (n0, n1, ...)
  --format json     {"name", "nodes": [{"id", "phase", "instance_key", "group",
                    "status"}], "edges": [{"from", "to"}]}; instance_key only
                    for for_each instances, group and status only when set

--status colours each phase by what a run would do now, as cairn plan decides:
run, cached or restore. --run RUN colours each phase by what that run did:
succeeded, cached, restored, failed, timed_out, over_budget, blocked, skipped,
stopped, pending or running (RUN is a run id, a unique prefix, or latest).
Phases the run did not include have no colour. DOT and Mermaid get a legend
of the statuses shown; JSON gets a "status" per node.

With TARGETs (phase names, instance addresses or declared output paths, as
for run), only they and the phases they need are drawn.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGraph(g, opts, args, cmd.OutOrStdout())
		},
	}
	addPhaseCompletion(g, cmd)
	opts.AddFlags(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"dot", "mermaid", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runGraph(g *globals, opts graphOptions, targets []string, out io.Writer) error {
	write, ok := graphFormats[opts.Format]
	if !ok {
		return usageError{fmt.Errorf("--format %q: want dot, mermaid or json", opts.Format)}
	}
	s, status, err := graphStatus(g, opts)
	if err != nil {
		return err
	}
	graph := s.Graph
	if len(targets) > 0 {
		var addrs []string
		for _, t := range targets {
			a := s.Resolve(t)
			if a == nil {
				return spec.UnknownTarget(s, t)
			}
			addrs = append(addrs, a...)
		}
		keep := graph.Ancestors(addrs...)
		for _, a := range addrs {
			keep[a] = true
		}
		graph = graph.Induced(keep)
	}
	d := dag.Drawing{
		Name: s.Experiment.Name,
		// The instances of a phase with for_each are drawn together,
		// labelled with the phase's name.
		Group: func(v string) (string, string) {
			if p := s.Phase(v); p != nil && p.HasForEach {
				return p.Block, p.Block + " (for_each)"
			}
			return "", ""
		},
		Instance: func(v string) (string, string, bool) {
			if p := s.Phase(v); p != nil && p.HasForEach {
				return p.Block, p.Key, true
			}
			return "", "", false
		},
	}
	if status != nil {
		d.Status = func(v string) string { return status[v] }
		d.Statuses = statusColors
	}
	return write(out, graph, d)
}

// graphStatus loads the spec and, if opts ask for colours, the status of
// each phase: from the plan with --status, from the run's record with
// --run. The status map is nil without either.
func graphStatus(g *globals, opts graphOptions) (*spec.Spec, map[string]string, error) {
	if opts.Run != "" {
		s, err := g.loadSpec()
		if err != nil {
			return nil, nil, err
		}
		ws, err := g.workspace()
		if err != nil {
			return nil, nil, err
		}
		id := opts.Run
		if id == "latest" {
			id = ""
		}
		st, err := ws.Records().FindRun(id)
		if errors.Is(err, runrec.ErrNoRuns) {
			return nil, nil, fmt.Errorf("graph --run %s: %w; start one with cairn run, or use --status for what a run would do", opts.Run, err)
		}
		if err != nil {
			return nil, nil, err
		}
		status := make(map[string]string, len(st.Phases))
		var gone []string
		for addr, ps := range st.Phases {
			if !s.Graph.Has(addr) {
				gone = append(gone, addr)
				continue
			}
			status[addr] = ps.Status
		}
		if len(gone) > 0 {
			sort.Strings(gone)
			g.warn(fmt.Sprintf("run %s has phases the spec no longer declares, not drawn: %s", st.RunID, strings.Join(gone, ", ")))
		}
		return s, status, nil
	}
	if !opts.Status {
		s, err := g.loadSpec()
		return s, nil, err
	}
	s, eng, err := g.openEngine(nil)
	if err != nil {
		return nil, nil, err
	}
	plan, err := eng.Plan(engine.PlanOptions{})
	if err != nil {
		return nil, nil, err
	}
	status := make(map[string]string, len(plan.Decisions))
	for _, d := range plan.Decisions {
		status[d.Phase] = string(d.Action)
	}
	return s, status, nil
}
