package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/dag"
)

func newGraphCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "graph",
		Short: "Print the phase graph as Graphviz DOT (pipe it to dot -Tsvg)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGraph(g, cmd.OutOrStdout())
		},
	}
}

func runGraph(g *globals, out io.Writer) error {
	s, err := g.loadSpec()
	if err != nil {
		return err
	}
	name := s.Experiment.Name
	if name == "" {
		name = "cairn"
	}
	// The instances of a phase with for_each are drawn together, in a
	// cluster labelled with the phase's name.
	cluster := func(v string) (string, string) {
		if p := s.Phase(v); p != nil && p.HasForEach {
			return p.Block, p.Block + " (for_each)"
		}
		return "", ""
	}
	return dag.WriteDOT(out, s.Graph, dag.DOTOptions{Name: name, Cluster: cluster})
}
