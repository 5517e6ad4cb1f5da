package main

import (
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/spec"
	specmemo "github.com/cairn-run/cairn/spec/memo"
)

// completePhases completes phase names (blocks and instance addresses)
// and declared output paths from the spec named by -f; a spec that does
// not load completes nothing.
func completePhases(g *globals) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		opts := spec.Options{LookupEnv: os.LookupEnv, VarFiles: g.VarFiles}
		// The memo when it is good (a tab press should not parse a
		// 1,000-phase spec), never written from here.
		s := specmemo.Load(g.File, opts, specMemoPath(g.File))
		if s == nil {
			var diags hcl.Diagnostics
			if s, diags = spec.NewParser().LoadFile(g.File, opts); diags.HasErrors() {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
		}
		seen := map[string]bool{}
		var names []string
		for _, ph := range s.Phases {
			for _, n := range []string{ph.Block, ph.Addr} {
				if n != "" && !seen[n] && strings.HasPrefix(n, toComplete) {
					seen[n] = true
					names = append(names, n)
				}
			}
		}
		// Declared output paths are targets too, offered once something
		// is typed (a sweep declares many).
		if toComplete != "" {
			for _, o := range s.OutputPaths() {
				if strings.HasPrefix(o, toComplete) && !seen[o] {
					seen[o] = true
					names = append(names, o)
				}
			}
		}
		sort.Strings(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// addPhaseCompletion completes positional phase names and the phase-valued
// flags of cmd.
func addPhaseCompletion(g *globals, cmd *cobra.Command, flags ...string) {
	fn := completePhases(g)
	cmd.ValidArgsFunction = fn
	for _, f := range flags {
		if cmd.Flags().Lookup(f) != nil {
			_ = cmd.RegisterFlagCompletionFunc(f, fn)
		}
	}
}
