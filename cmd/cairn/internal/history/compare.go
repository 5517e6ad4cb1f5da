package history

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/cairn-run/cairn/cmd/cairn/internal/progress"
	"github.com/cairn-run/cairn/runrec"
)

// Comparison is the view the compare command renders: one row per phase
// and field of two runs.
type Comparison struct {
	a, b string // run ids
	rows []compareRow
}

type compareRow struct {
	phase, field string
	a, b         json.RawMessage // nil: not recorded in that run
	changed      bool
}

// runRow is the phase name of the rows about whole runs.
const runRow = "(run)"

// Compare lines up two runs: the runs as a whole first (status,
// spending, duration), then every phase of either run in natural order
// with its status, params, metrics, cost, iterations and duration. A
// spending row is left out when neither run spent anything on it.
func Compare(a, b *runrec.RunState) *Comparison {
	c := &Comparison{a: a.RunID, b: b.RunID}
	ta, tb := a.Total(), b.Total()
	c.add(runRow, "status", jsonString(a.Status), jsonString(b.Status))
	c.addSpend(runRow, &spend{ta.Cost, ta.Iterations, RunDuration(a).Milliseconds()}, &spend{tb.Cost, tb.Iterations, RunDuration(b).Milliseconds()})

	addrs := map[string]bool{}
	for addr := range a.Phases {
		addrs[addr] = true
	}
	for addr := range b.Phases {
		addrs[addr] = true
	}
	for _, addr := range sortedNames(addrs) {
		pa, pb := a.Phases[addr], b.Phases[addr]
		var sa, sb json.RawMessage
		var va, vb map[string]json.RawMessage
		var ma, mb map[string]json.RawMessage
		var spendA, spendB *spend
		if pa != nil {
			sa, va, ma = jsonString(pa.Status), flattenParams(pa.Params), flattenMetrics(pa.Metrics)
			spendA = &spend{pa.Cost, pa.Iterations, pa.DurationMS}
		}
		if pb != nil {
			sb, vb, mb = jsonString(pb.Status), flattenParams(pb.Params), flattenMetrics(pb.Metrics)
			spendB = &spend{pb.Cost, pb.Iterations, pb.DurationMS}
		}
		c.add(addr, "status", sa, sb)
		for _, group := range [][2]map[string]json.RawMessage{{va, vb}, {ma, mb}} {
			names := map[string]bool{}
			for k := range group[0] {
				names[k] = true
			}
			for k := range group[1] {
				names[k] = true
			}
			for _, k := range sortedNames(names) {
				c.add(addr, k, group[0][k], group[1][k])
			}
		}
		c.addSpend(addr, spendA, spendB)
	}
	return c
}

func (c *Comparison) add(phase, field string, a, b json.RawMessage) {
	changed := (a == nil) != (b == nil) || a != nil && !sameValue(a, b)
	c.rows = append(c.rows, compareRow{phase: phase, field: field, a: a, b: b, changed: changed})
}

// spend is what a phase or run spent, for comparison.
type spend struct {
	cost       float64
	iterations int64
	ms         int64
}

// addSpend adds the cost, iterations and duration rows that either side
// has a value for (nil: not in that run). Durations differing by less
// than a second or 10% are unchanged: timing noise is not a difference
// worth showing.
func (c *Comparison) addSpend(phase string, a, b *spend) {
	val := func(s *spend, f func(*spend) string) json.RawMessage {
		if s == nil {
			return nil
		}
		return json.RawMessage(f(s))
	}
	nonzero := func(f func(*spend) bool) bool { return a != nil && f(a) || b != nil && f(b) }
	if nonzero(func(s *spend) bool { return s.cost != 0 }) {
		f := func(s *spend) string { return runrec.FormatCost(s.cost) }
		c.add(phase, "cost", val(a, f), val(b, f))
	}
	if nonzero(func(s *spend) bool { return s.iterations != 0 }) {
		f := func(s *spend) string { return strconv.FormatInt(s.iterations, 10) }
		c.add(phase, "iterations", val(a, f), val(b, f))
	}
	if nonzero(func(s *spend) bool { return s.ms != 0 }) {
		f := func(s *spend) string { return strconv.FormatInt(s.ms, 10) }
		changed := a == nil || b == nil
		if !changed {
			d := max(a.ms, b.ms) - min(a.ms, b.ms)
			changed = d >= 1000 && d*10 >= max(a.ms, b.ms)
		}
		c.rows = append(c.rows, compareRow{phase: phase, field: "duration", a: val(a, f), b: val(b, f), changed: changed})
	}
}

// sameValue compares two JSON values: numbers by value, anything else by
// its compact text.
func sameValue(a, b json.RawMessage) bool {
	if isNumber(a) && isNumber(b) {
		return compareValues(a, b) == 0
	}
	return string(a) == string(b)
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// differences counts the changed rows.
func (c *Comparison) differences() int {
	n := 0
	for _, r := range c.rows {
		if r.changed {
			n++
		}
	}
	return n
}

func (c *Comparison) WriteText(w io.Writer, all bool, precision int, color bool) error {
	n := c.differences()
	if n == 0 && !all {
		_, err := fmt.Fprintf(w, "runs %s and %s do not differ (%s compared; --all shows them)\n", c.a, c.b, progress.Plural(len(c.rows), "value"))
		return err
	}
	rows := [][]cell{{{}, {text: "phase"}, {text: "field"}, {text: c.a}, {text: c.b}}}
	for _, r := range c.rows {
		if !r.changed && !all {
			continue
		}
		text := func(v json.RawMessage) string {
			if r.field == "duration" && v != nil {
				ms, _ := strconv.ParseInt(string(v), 10, 64)
				return progress.FormatDuration(time.Duration(ms) * time.Millisecond)
			}
			return cellText(v, precision)
		}
		line := []cell{{}, {text: r.phase}, {text: r.field}, {text: text(r.a)}, {text: text(r.b)}}
		if r.changed {
			line[0] = cell{text: "*", color: colorYellow}
			line[3].color, line[4].color = colorRed, colorGreen
		}
		rows = append(rows, line)
	}
	if err := writeTable(w, rows, color); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d of %s differ\n", n, progress.Plural(len(c.rows), "value"))
	return err
}

// WriteJSON writes {"a": RUN, "b": RUN, "differences": N, "rows": [...]}
// with the rows the text shows; a duration is in milliseconds
// (duration_ms), a value missing from a run is null.
func (c *Comparison) WriteJSON(w io.Writer, all bool) error {
	type row struct {
		Phase   string          `json:"phase"`
		Field   string          `json:"field"`
		A       json.RawMessage `json:"a"`
		B       json.RawMessage `json:"b"`
		Changed bool            `json:"changed"`
	}
	doc := struct {
		A           string `json:"a"`
		B           string `json:"b"`
		Differences int    `json:"differences"`
		Rows        []row  `json:"rows"`
	}{A: c.a, B: c.b, Differences: c.differences(), Rows: []row{}}
	null := json.RawMessage("null")
	for _, r := range c.rows {
		if !r.changed && !all {
			continue
		}
		x := row{Phase: r.phase, Field: r.field, A: r.a, B: r.b, Changed: r.changed}
		if x.Field == "duration" {
			x.Field = "duration_ms"
		}
		if x.A == nil {
			x.A = null
		}
		if x.B == nil {
			x.B = null
		}
		doc.Rows = append(doc.Rows, x)
	}
	return writeJSON(w, doc)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// RunDuration is how long a run took, or has taken so far while it runs;
// a run that stopped without ending lasted until its last heartbeat.
func RunDuration(st *runrec.RunState) time.Duration {
	end := time.Now()
	if st.Ended != nil {
		end = *st.Ended
	} else if st.Status != runrec.RunRunning {
		end = st.Heartbeat
	}
	return end.Sub(st.Started)
}
