package main

import (
	"errors"
	"io"
	"os"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairn-run/cairn/cmd/cairn/internal/history"
	"github.com/cairn-run/cairn/cmd/cairn/internal/progress"
	"github.com/cairn-run/cairn/runrec"
)

type compareOptions struct {
	All       bool
	JSON      bool
	Precision int
}

func (o *compareOptions) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.All, "all", false, "show unchanged values too")
	f.BoolVar(&o.JSON, "json", false, "print the comparison as JSON")
	f.IntVar(&o.Precision, "precision", 5, "show numbers with a fraction to `N` significant digits (0: as recorded)")
}

func newCompareCommand(g *globals) *cobra.Command {
	var opts compareOptions
	cmd := &cobra.Command{
		Use:   "compare [RUN [RUN]]",
		Short: "Compare the params, metrics, statuses and spending of two runs side by side",
		Long: `Compare two runs phase by phase: status, params (param.NAME), metrics, cost,
iterations and duration, one row per phase instance and field, changed rows
marked with *. Unchanged rows are hidden unless --all. With one RUN, it is
compared with the latest run; with none, the latest run is compared with the
one before it. Durations within a second or 10% of each other count as
unchanged. The (run) rows compare the runs as a whole.`,
		Args:              cobra.MaximumNArgs(2),
		ValidArgsFunction: completeRuns(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(g, opts, args, cmd.OutOrStdout())
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

func runCompare(g *globals, opts compareOptions, args []string, out io.Writer) error {
	ws, err := g.workspace()
	if err != nil {
		return err
	}
	var a, b *runrec.RunState
	switch len(args) {
	case 2:
		if a, err = ws.Records().FindRun(args[0]); err == nil {
			b, err = ws.Records().FindRun(args[1])
		}
	case 1:
		if a, err = ws.Records().FindRun(args[0]); err == nil {
			b, err = ws.Records().FindRun("")
		}
	default:
		var runs []*runrec.RunState // the newest two, newest first
		rerr := ws.Records().RunsNewestFirst(func(st *runrec.RunState) bool {
			runs = append(runs, st)
			return len(runs) < 2
		})
		if rerr != nil {
			return rerr
		}
		if len(runs) < 2 {
			return errors.New("cairn compare needs two runs, and this workspace has " + progress.Plural(len(runs), "run") + "; name them: cairn compare RUN RUN")
		}
		a, b = runs[1], runs[0]
	}
	if err != nil {
		return err
	}
	c := history.Compare(a, b)
	if opts.JSON {
		return c.WriteJSON(out, opts.All)
	}
	color := false
	if f, ok := out.(*os.File); ok && os.Getenv("NO_COLOR") == "" {
		color = isatty.IsTerminal(f.Fd())
	}
	return c.WriteText(out, opts.All, opts.Precision, color)
}

// completeRuns completes run ids, newest first.
func completeRuns(g *globals) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		ws, err := g.workspace()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		runs, _ := ws.Records().Runs()
		var ids []string
		for i := len(runs) - 1; i >= 0; i-- {
			if strings.HasPrefix(runs[i].RunID, toComplete) {
				ids = append(ids, runs[i].RunID)
			}
		}
		return ids, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
}
