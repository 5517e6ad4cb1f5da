package runrec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Spend is what a phase, a memoised call or a run reported spending.
type Spend struct {
	Cost       float64 `json:"cost"`
	Iterations int64   `json:"iterations"`
}

// CostBound is the largest cost cairn accepts on a report line and the
// most any sum of costs (a phase's, a run's ledger) reaches: beyond it a
// float loses the cents, and far beyond it a sum becomes +Inf, which no
// run record can hold.
const CostBound = 1e15

// Add returns s plus o. Costs are rounded to nine decimals, so that sums
// of decimal amounts (0.1 + 0.2) read as users expect. The cost stops at
// CostBound and the iterations at the largest int64, so a sum is always a
// number a run record can hold.
func (s Spend) Add(o Spend) Spend {
	it := s.Iterations + o.Iterations
	if o.Iterations > 0 && s.Iterations > math.MaxInt64-o.Iterations {
		it = math.MaxInt64
	}
	return Spend{Cost: addCost(s.Cost, o.Cost), Iterations: it}
}

// addCost returns a+b, rounded, at most CostBound; a cost that is not a
// number counts as 0.
func addCost(a, b float64) float64 {
	if math.IsNaN(a) {
		a = 0
	}
	if math.IsNaN(b) {
		b = 0
	}
	if c := a + b; c > CostBound {
		return CostBound
	} else if c < -CostBound {
		return -CostBound
	}
	return RoundCost(a + b)
}

// RoundCost rounds a cost to nine decimals, as sums of costs are.
func RoundCost(f float64) float64 { return math.Round(f*1e9) / 1e9 }

// ReportLine is one line a phase appended to $CAIRN_REPORT. Fields other
// than cost and iterations are allowed and ignored.
type ReportLine struct {
	Spend
	// HasCost is true when the line carried a cost field.
	HasCost bool
}

// ParseReportLine parses one $CAIRN_REPORT line: a JSON object with
// optional numeric "cost" (zero or more, at most CostBound) and
// "iterations" (a whole number, zero or more).
func ParseReportLine(line []byte) (ReportLine, error) {
	var raw map[string]json.RawMessage
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return ReportLine{}, errors.New(`not a JSON object (write lines like {"cost": 0.02, "iterations": 1})`)
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return ReportLine{}, fmt.Errorf("not a JSON object: %v", err)
	}
	var r ReportLine
	if v, ok := raw["cost"]; ok {
		var f float64
		if err := json.Unmarshal(v, &f); err != nil {
			return ReportLine{}, fmt.Errorf("cost %s is not a number", v)
		}
		switch {
		case math.IsInf(f, 0) || math.IsNaN(f):
			return ReportLine{}, fmt.Errorf("cost %s is not a finite number", v)
		case f < 0:
			return ReportLine{}, fmt.Errorf("cost %s is negative", v)
		case f > CostBound:
			return ReportLine{}, fmt.Errorf("cost %s is above %g, the largest cost cairn records; report it in a larger unit", v, float64(CostBound))
		}
		r.Cost, r.HasCost = f, true
	}
	if v, ok := raw["iterations"]; ok {
		var n int64
		if err := json.Unmarshal(v, &n); err != nil || n < 0 {
			return ReportLine{}, fmt.Errorf("iterations %s is not a whole number, zero or more", v)
		}
		r.Iterations = n
	}
	return r, nil
}

// SumReport adds up the well-formed lines of a report; malformed ones
// were warned about when they were written and count for nothing.
func SumReport(data []byte) Spend {
	var total Spend
	for _, line := range bytes.Split(data, []byte("\n")) {
		if r, err := ParseReportLine(line); err == nil {
			total = total.Add(r.Spend)
		}
	}
	return total
}

// FormatCost renders a cost without trailing zeros.
func FormatCost(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
