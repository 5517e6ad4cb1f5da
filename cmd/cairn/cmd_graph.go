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
	return dag.WriteDOT(out, s.Graph, dag.DOTOptions{Name: name})
}
