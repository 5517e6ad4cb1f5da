package history

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

// MetricsTable is the view the metrics command renders: fixed columns
// run and phase, then the params, then the metrics, each group in natural
// order.
type MetricsTable struct {
	paramCols  []string
	metricCols []string
	rows       []metricsRow
}

type metricsRow struct {
	run, phase string
	values     map[string]json.RawMessage // by column name, params and metrics
}

// Len is the number of rows.
func (t *MetricsTable) Len() int { return len(t.rows) }

// columns returns every column name in display order.
func (t *MetricsTable) columns() []string {
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

// BuildMetrics makes one row per phase of each run (newest run
// first, phases in natural order) that recorded metrics, or that has
// params and got as far as running or being found in the cache. phases,
// when given, keeps only those phases (names or instance addresses).
func BuildMetrics(runs []*runrec.RunState, phases []string) (*MetricsTable, error) {
	keep, err := phaseFilter(runs, phases)
	if err != nil {
		return nil, err
	}
	t := &MetricsTable{}
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

// SortBy sorts the rows by a column, stably (ties keep the default
// order); missing values come last in both directions.
func (t *MetricsTable) SortBy(col string, desc bool) error {
	cols := t.columns()
	found := false
	for _, c := range cols {
		found = found || c == col
	}
	if !found {
		return fmt.Errorf("--sort %s: no such column; columns: %s", col, strings.Join(cols, ", "))
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

func (t *MetricsTable) WriteText(w io.Writer, precision int) error {
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

// WriteJSON writes an array of objects, one per row, whose members are the
// row's columns in display order; a missing value is left out.
func (t *MetricsTable) WriteJSON(w io.Writer) error {
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

// WriteCSV writes a header line and one record per row; values are at
// full precision, strings bare, a missing value empty.
func (t *MetricsTable) WriteCSV(w io.Writer) error {
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
