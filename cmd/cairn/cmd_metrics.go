package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairn-run/cairn/cmd/cairn/internal/history"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/workspace"
)

type metricsOptions struct {
	Runs      []string
	Latest    bool
	Sort      string
	Desc      bool
	JSON      bool
	CSV       bool
	Precision int
}

func (o *metricsOptions) AddFlags(f *pflag.FlagSet) {
	f.StringArrayVar(&o.Runs, "run", nil, "show run `RUN` only (an id or a unique prefix; repeatable)")
	f.BoolVar(&o.Latest, "latest", false, "show the latest run only")
	f.StringVar(&o.Sort, "sort", "", "sort rows by column `KEY` (numbers by value, missing values last; -KEY sorts descending)")
	f.BoolVar(&o.Desc, "desc", false, "sort descending")
	f.BoolVar(&o.JSON, "json", false, "print the rows as a JSON array of objects")
	f.BoolVar(&o.CSV, "csv", false, "print the rows as CSV (missing values empty)")
	f.IntVar(&o.Precision, "precision", 5, "show numbers with a fraction to `N` significant digits in the table (0: as recorded)")
}

func newMetricsCommand(g *globals) *cobra.Command {
	var opts metricsOptions
	cmd := &cobra.Command{
		Use:   "metrics [PHASE...]",
		Short: "Show the params and metrics of phases across runs and sweep instances as one table",
		Long: `Show one row per phase instance and run with the phase's params (param.NAME)
and the metrics it recorded (the JSON files named in its metrics attribute,
nested keys joined with dots). Every run records the metrics of every phase it
covered, cached ones included. Rows come from all runs, newest first, unless
--run or --latest narrows them; a PHASE (a name or an instance address)
narrows them to those phases. Phases without params or metrics are left out.`,
		ValidArgsFunction: completePhases(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMetrics(g, opts, args, cmd.OutOrStdout())
		},
	}
	opts.AddFlags(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("run", completeRuns(g))
	return cmd
}

func runMetrics(g *globals, opts metricsOptions, phases []string, out io.Writer) error {
	if opts.JSON && opts.CSV {
		return usageError{errors.New("--json and --csv cannot be combined")}
	}
	if opts.Latest && len(opts.Runs) > 0 {
		return usageError{errors.New("--latest and --run cannot be combined")}
	}
	ws, err := g.workspace()
	if err != nil {
		return err
	}
	runs, err := selectRuns(ws, opts.Runs, opts.Latest)
	if err != nil {
		return err
	}
	t, err := history.BuildMetrics(runs, phases)
	if err != nil {
		return err
	}
	if opts.Sort != "" {
		key, desc := opts.Sort, opts.Desc
		if k, ok := strings.CutPrefix(key, "-"); ok {
			key, desc = k, true
		}
		if err := t.SortBy(key, desc); err != nil {
			return usageError{err}
		}
	}
	switch {
	case opts.JSON:
		return t.WriteJSON(out)
	case opts.CSV:
		return t.WriteCSV(out)
	}
	if t.Len() == 0 {
		_, err := fmt.Fprintln(out, "no params or metrics recorded in the selected runs")
		return err
	}
	return t.WriteText(out, opts.Precision)
}

// selectRuns returns the runs to show, newest first: the given ones, the
// latest, or all.
func selectRuns(ws workspace.Workspace, ids []string, latest bool) ([]*runrec.RunState, error) {
	if len(ids) > 0 {
		var out []*runrec.RunState
		seen := map[string]bool{}
		for _, id := range ids {
			st, err := ws.Records().FindRun(id)
			if err != nil {
				return nil, err
			}
			if !seen[st.RunID] {
				seen[st.RunID] = true
				out = append(out, st)
			}
		}
		sortNewestFirst(out)
		return out, nil
	}
	if latest {
		var st *runrec.RunState
		err := ws.Records().RunsNewestFirst(func(r *runrec.RunState) bool {
			st = r
			return false
		})
		if err != nil {
			return nil, err
		}
		if st == nil {
			return nil, runrec.ErrNoRuns
		}
		return []*runrec.RunState{st}, nil
	}
	runs, err := ws.Records().Runs()
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, runrec.ErrNoRuns
	}
	sortNewestFirst(runs)
	return runs, nil
}

func sortNewestFirst(runs []*runrec.RunState) {
	sort.SliceStable(runs, func(i, j int) bool {
		if !runs[i].Started.Equal(runs[j].Started) {
			return runs[i].Started.After(runs[j].Started)
		}
		return runs[i].RunID > runs[j].RunID
	})
}
