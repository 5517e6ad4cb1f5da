package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
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
	t, err := buildMetricsTable(runs, phases)
	if err != nil {
		return err
	}
	if opts.Sort != "" {
		key, desc := opts.Sort, opts.Desc
		if k, ok := strings.CutPrefix(key, "-"); ok {
			key, desc = k, true
		}
		if err := t.sortBy(key, desc); err != nil {
			return err
		}
	}
	switch {
	case opts.JSON:
		return t.writeJSON(out)
	case opts.CSV:
		return t.writeCSV(out)
	}
	if len(t.rows) == 0 {
		_, err := fmt.Fprintln(out, "no params or metrics recorded in the selected runs")
		return err
	}
	return t.writeText(out, opts.Precision)
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

// metricsTable is the view the metrics command renders: fixed columns
// run and phase, then the params, then the metrics, each group in natural
// order.
type metricsTable struct {
	paramCols  []string
	metricCols []string
	rows       []metricsRow
}

type metricsRow struct {
	run, phase string
	values     map[string]json.RawMessage // by column name, params and metrics
}

// columns returns every column name in display order.
func (t *metricsTable) columns() []string {
	return append(append([]string{"run", "phase"}, t.paramCols...), t.metricCols...)
}

// value returns a row's value in a column, or nil.
func (r *metricsRow) value(col string) json.RawMessage {
	switch col {
	case "run":
		b, _ := json.Marshal(r.run)
		return b
	case "phase":
		b, _ := json.Marshal(r.phase)
		return b
	}
	return r.values[col]
}

// buildMetricsTable makes one row per phase of each run (newest run
// first, phases in natural order) that recorded metrics, or that has
// params and got as far as running or being found in the cache. phases,
// when given, keeps only those phases (names or instance addresses).
func buildMetricsTable(runs []*runrec.RunState, phases []string) (*metricsTable, error) {
	keep, err := phaseFilter(runs, phases)
	if err != nil {
		return nil, err
	}
	t := &metricsTable{}
	params, metrics := map[string]bool{}, map[string]bool{}
	for _, st := range runs {
		for _, addr := range sortedNames(st.Phases) {
			ps := st.Phases[addr]
			if !keep(addr) {
				continue
			}
			switch {
			case len(ps.Metrics) > 0:
			case len(ps.Params) > 0 && !notStarted(ps.Status):
			default:
				continue
			}
			row := metricsRow{run: st.RunID, phase: addr, values: map[string]json.RawMessage{}}
			for k, v := range flattenParams(ps.Params) {
				row.values[k] = v
				params[k] = true
			}
			for k, v := range flattenMetrics(ps.Metrics) {
				row.values[k] = v
				metrics[k] = true
			}
			t.rows = append(t.rows, row)
		}
	}
	t.paramCols, t.metricCols = sortedNames(params), sortedNames(metrics)
	return t, nil
}

// notStarted reports whether a phase status means the phase did nothing
// in the run.
func notStarted(status string) bool {
	switch status {
	case runrec.StatusPending, runrec.StatusSkipped, runrec.StatusBlocked:
		return true
	}
	return false
}

// phaseFilter returns a predicate keeping the phases named (by address,
// or by block name for all of its instances); every name must match a
// phase of one of the runs.
func phaseFilter(runs []*runrec.RunState, names []string) (func(string) bool, error) {
	if len(names) == 0 {
		return func(string) bool { return true }, nil
	}
	known := map[string]bool{}
	for _, st := range runs {
		for addr := range st.Phases {
			known[addr] = true
			known[blockOf(addr)] = true
		}
	}
	want := map[string]bool{}
	for _, n := range names {
		if !known[n] {
			return nil, &spec.UnknownPhaseError{Name: n, Valid: sortedNames(known)}
		}
		want[n] = true
	}
	return func(addr string) bool { return want[addr] || want[blockOf(addr)] }, nil
}

// blockOf returns the block name of a phase address (harden["m1"] ->
// harden).
func blockOf(addr string) string {
	name, _, _ := strings.Cut(addr, "[")
	return name
}

// sortBy sorts the rows by a column, stably (ties keep the default
// order); missing values come last in both directions.
func (t *metricsTable) sortBy(col string, desc bool) error {
	cols := t.columns()
	found := false
	for _, c := range cols {
		found = found || c == col
	}
	if !found {
		return usageError{fmt.Errorf("--sort %s: no such column; columns: %s", col, strings.Join(cols, ", "))}
	}
	sort.SliceStable(t.rows, func(i, j int) bool {
		a, b := t.rows[i].value(col), t.rows[j].value(col)
		switch {
		case a == nil || b == nil:
			return a != nil && b == nil
		case desc:
			return compareValues(a, b) > 0
		default:
			return compareValues(a, b) < 0
		}
	})
	return nil
}

func (t *metricsTable) writeText(w io.Writer, precision int) error {
	cols := t.columns()
	rows := make([][]cell, 0, len(t.rows)+1)
	header := make([]cell, len(cols))
	for i, c := range cols {
		header[i] = cell{text: c}
	}
	rows = append(rows, header)
	for _, r := range t.rows {
		line := make([]cell, len(cols))
		for i, c := range cols {
			line[i] = cell{text: cellText(r.value(c), precision)}
		}
		rows = append(rows, line)
	}
	return writeTable(w, rows, false)
}

// writeJSON writes an array of objects, one per row, whose members are the
// row's columns in display order; a missing value is left out.
func (t *metricsTable) writeJSON(w io.Writer) error {
	cols := t.columns()
	var b bytes.Buffer
	b.WriteByte('[')
	for i, r := range t.rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		n := 0
		for _, c := range cols {
			v := r.value(c)
			if v == nil {
				continue
			}
			if n > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(c)
			b.Write(k)
			b.WriteByte(':')
			b.Write(v)
			n++
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return fmt.Errorf("encode rows: %w", err)
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}

// writeCSV writes a header line and one record per row; values are at
// full precision, strings bare, a missing value empty.
func (t *metricsTable) writeCSV(w io.Writer) error {
	cols := t.columns()
	cw := csv.NewWriter(w)
	if err := cw.Write(cols); err != nil {
		return err
	}
	for _, r := range t.rows {
		rec := make([]string, len(cols))
		for i, c := range cols {
			rec[i] = csvText(r.value(c))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
