package main

import (
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/hcl/v2"

	"github.com/spf13/cobra"
)

func newValidateCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check the experiment file and report every problem at once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runValidate(g, cmd.OutOrStdout())
		},
	}
}

func runValidate(g *globals, out io.Writer) error {
	s, err := g.loadSpec()
	if err != nil {
		return err
	}
	if diags := s.CheckInputFiles(); diags.HasErrors() {
		files := map[string]*hcl.File{}
		if src, err := os.ReadFile(g.File); err == nil {
			files[g.File] = &hcl.File{Body: hcl.EmptyBody(), Bytes: src} // for the snippets
		}
		return &diagError{diags: diags, files: files}
	}
	fmt.Fprintf(out, "%s is valid: %d phases\n", g.File, len(s.Phases))
	return nil
}
