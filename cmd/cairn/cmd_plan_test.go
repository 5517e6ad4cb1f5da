package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/engine"
)

// TestWritePlanMatchesTabwriter: the plan laid out directly is byte for
// byte what text/tabwriter makes of it.
func TestWritePlanMatchesTabwriter(t *testing.T) {
	words := []string{"", " ", "new phase", "input in.txt changed ", "upstream a will run", "forced", "é", "日本語", `param seed "1" → "2"`, "a  b", "x\ty", "trailing\n"}
	actions := []engine.Action{engine.ActionRun, engine.ActionCached, engine.ActionRestore}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return words[rng.IntN(len(words))] }
	var plans []*engine.PlanResult
	plans = append(plans, &engine.PlanResult{})
	for range 300 {
		p := &engine.PlanResult{Run: rng.IntN(9), Cached: rng.IntN(9), Restore: rng.IntN(9)}
		for i := range rng.IntN(6) {
			d := &engine.Decision{Action: actions[rng.IntN(3)], Phase: fmt.Sprintf("cell[%q]", pick()+fmt.Sprint(i))}
			for range rng.IntN(4) {
				d.Reasons = append(d.Reasons, pick())
			}
			p.Decisions = append(p.Decisions, d)
		}
		plans = append(plans, p)
	}
	direct := 0
	for i, p := range plans {
		var got, want bytes.Buffer
		writePlan(&got, p)
		writePlanTabwriter(&want, p)
		if diff := cmp.Diff(want.String(), got.String()); diff != "" {
			t.Fatalf("plan %d (-tabwriter +direct):\n%s", i, diff)
		}
		if !planHasBreaks(p) {
			direct++
		}
	}
	if direct < 50 {
		t.Fatalf("only %d plans were laid out directly", direct)
	}
}

// TestWritePlanEscapeByte: a reason holding the byte 0xff (a file name
// that is not UTF-8, in "input NAME changed") is laid out as
// text/tabwriter lays it out: tabwriter reads that byte as its Escape,
// which brackets text that is neither a cell nor a line break.
func TestWritePlanEscapeByte(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reasons [][]string // per decision
	}{
		{"first reason", [][]string{{"input data/\xff.bin changed"}, {"new phase"}}},
		{"further reason", [][]string{{"new phase", "input \xffa\xff changed", "forced"}, {"new phase"}}},
		{"unclosed in the last phase", [][]string{{"new phase"}, {"input \xff changed", "input b changed"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &engine.PlanResult{Run: len(tc.reasons)}
			for i, rs := range tc.reasons {
				p.Decisions = append(p.Decisions, &engine.Decision{Action: engine.ActionRun, Phase: fmt.Sprintf("phase_%d%s", i, strings.Repeat("x", i)), Reasons: rs})
			}
			var got, want bytes.Buffer
			writePlan(&got, p)
			writePlanTabwriter(&want, p)
			if diff := cmp.Diff(want.String(), got.String()); diff != "" {
				t.Errorf("(-tabwriter +direct):\n%s", diff)
			}
		})
	}
}
