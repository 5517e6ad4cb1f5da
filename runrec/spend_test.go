package runrec

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseReportLine(t *testing.T) {
	tests := map[string]struct {
		line    string
		want    ReportLine
		wantErr string
	}{
		"both":          {line: `{"cost": 0.02, "iterations": 1}`, want: ReportLine{Spend: Spend{Cost: 0.02, Iterations: 1}, HasCost: true}},
		"cost only":     {line: `{"cost": 1.5}`, want: ReportLine{Spend: Spend{Cost: 1.5}, HasCost: true}},
		"other fields":  {line: ` {"iterations": 3, "model": "m1", "tokens": 120} `, want: ReportLine{Spend: Spend{Iterations: 3}}},
		"empty object":  {line: `{}`, want: ReportLine{}},
		"not json":      {line: `cost=1`, wantErr: "not a JSON object"},
		"array":         {line: `[1]`, wantErr: "not a JSON object"},
		"truncated":     {line: `{"cost": 0.`, wantErr: "not a JSON object"},
		"string cost":   {line: `{"cost": "1"}`, wantErr: "cost \"1\" is not a number"},
		"negative cost": {line: `{"cost": -1}`, wantErr: "negative"},
		"huge cost":     {line: `{"cost": 1e300}`, wantErr: "above 1e+15"},
		"cost at bound": {line: `{"cost": 1e15}`, want: ReportLine{Spend: Spend{Cost: 1e15}, HasCost: true}},
		"float iters":   {line: `{"iterations": 1.5}`, wantErr: "not a whole number"},
		"negative iter": {line: `{"iterations": -2}`, wantErr: "not a whole number"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseReportLine([]byte(tt.line))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseReportLine(%q) error = %v, want it to contain %q", tt.line, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseReportLine(%q) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

// TestSpendAddBounded: sums never leave the range a run record can hold.
func TestSpendAddBounded(t *testing.T) {
	tests := map[string]struct {
		a, b, want Spend
	}{
		"decimals":         {a: Spend{Cost: 0.1}, b: Spend{Cost: 0.2}, want: Spend{Cost: 0.3}},
		"bound reached":    {a: Spend{Cost: CostBound}, b: Spend{Cost: CostBound}, want: Spend{Cost: CostBound}},
		"huge sum":         {a: Spend{Cost: 1e300}, b: Spend{Cost: 1e300}, want: Spend{Cost: CostBound}},
		"inf":              {a: Spend{Cost: math.Inf(1)}, b: Spend{Cost: 1}, want: Spend{Cost: CostBound}},
		"nan":              {a: Spend{Cost: math.NaN()}, b: Spend{Cost: 2}, want: Spend{Cost: 2}},
		"iterations":       {a: Spend{Iterations: math.MaxInt64 - 1}, b: Spend{Iterations: 5}, want: Spend{Iterations: math.MaxInt64}},
		"iterations exact": {a: Spend{Iterations: 3}, b: Spend{Iterations: 4}, want: Spend{Iterations: 7}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.a.Add(tt.b)); diff != "" {
				t.Errorf("%+v.Add(%+v) (-want +got):\n%s", tt.a, tt.b, diff)
			}
		})
	}
}

// TestStateEncodesNonFiniteCost: a cost that is not finite never stops
// the run record from being written.
func TestStateEncodesNonFiniteCost(t *testing.T) {
	max := math.Inf(1)
	st := &RunState{RunID: "r", Status: RunSucceeded, MaxCost: &max, Spent: Spend{Cost: math.Inf(1)},
		Phases: map[string]*PhaseState{"a": {Status: StatusSucceeded, Cost: math.Inf(1)}, "b": {Status: StatusSucceeded, Cost: math.NaN()}}}
	b, err := Marshal(st)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	if !strings.Contains(string(b), `"cost": 1000000000000000`) {
		t.Errorf("an infinite cost is not written as the bound:\n%s", b)
	}
}

// FuzzParseReportLine: any bytes give a result or an error, never a
// panic, and an accepted line has a usable spend.
func FuzzParseReportLine(f *testing.F) {
	for _, s := range []string{`{"cost": 0.02, "iterations": 1}`, `{}`, `{"cost": 1e308}`, `{"iterations": 9223372036854775807}`, `nonsense`, `{"cost": null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseReportLine(b)
		if err != nil {
			return
		}
		if r.Cost < 0 || r.Iterations < 0 || r.Cost != r.Cost {
			t.Fatalf("ParseReportLine(%q) = %+v", b, r)
		}
	})
}
