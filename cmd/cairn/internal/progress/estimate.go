package progress

import (
	"fmt"
	"strings"
	"time"

	"github.com/cairn-run/cairn/estimate"
	"github.com/cairn-run/cairn/runrec"
)

// EstimateCells renders a phase's estimate as the plan's three columns:
// its duration ("~1.2s", "unknown"; a star when borrowed from the other
// instances of its for_each), its cost ("cost 0.3") and its iterations
// ("40 it"), each empty when the history holds none of it.
func EstimateCells(est *estimate.Estimate) [3]string {
	if !est.Known() {
		return [3]string{"unknown"}
	}
	var c [3]string
	c[0] = "~" + FormatDuration(ms(est.DurationMS.Est))
	if est.Source == estimate.Siblings {
		c[0] += "*"
	}
	if est.Cost.Max > 0 {
		c[1] = "cost " + runrec.FormatCost(est.Cost.Est)
	}
	if est.Iterations.Max > 0 {
		c[2] = fmt.Sprintf("%d it", est.Iterations.Est)
	}
	return c
}

// EstimateLine is the plan's line of totals:
//
//	estimate for 3 phases: ~1.2s of work (0.9s–2.1s), ~0.6s with 4 jobs; cost 0.9 (0.6–1.2); 400 iterations (300–500); 1 phase unknown
func EstimateLine(t *estimate.Total) string {
	if t.Phases == 0 {
		return fmt.Sprintf("estimate: unknown for %s (no recorded run of them or of their for_each siblings)", Plural(t.Unknown, "phase"))
	}
	d := t.DurationMS
	parts := []string{fmt.Sprintf("~%s of work (%s–%s), ~%s with %s",
		FormatDuration(ms(d.Est)), FormatDuration(ms(d.Min)), FormatDuration(ms(d.Max)), FormatDuration(ms(t.WallMS)), Plural(t.Jobs, "job"))}
	if c := t.Cost; c.Max > 0 {
		parts = append(parts, fmt.Sprintf("cost %s (%s–%s)", runrec.FormatCost(c.Est), runrec.FormatCost(c.Min), runrec.FormatCost(c.Max)))
	}
	if it := t.Iterations; it.Max > 0 {
		parts = append(parts, fmt.Sprintf("%d iterations (%d–%d)", it.Est, it.Min, it.Max))
	}
	if t.Unknown > 0 {
		parts = append(parts, Plural(t.Unknown, "phase")+" unknown")
	}
	return fmt.Sprintf("estimate for %s: %s", Plural(t.Phases, "phase"), strings.Join(parts, "; "))
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// eta is the bar's estimate of the time left, "eta ~1m20s" ("eta
// ≥1m20s" when some phase left has no estimate), or "" before the run
// reported its estimates. Every phase not finished is assumed to run
// (phases found cached later end it sooner): the remaining time of each is
// its estimate, less its elapsed time while it runs; the run's is the
// longer of the longest of the running phases' and their sum spread over
// the job slots.
func (v *termView) eta() string {
	if v.ests == nil {
		return ""
	}
	now := v.now()
	var sum, longest time.Duration
	unknown := 0
	running := map[string]bool{}
	for _, lp := range v.running {
		running[lp.name] = true
		est := v.ests[lp.name]
		if !est.Known() {
			unknown++
			continue
		}
		left := max(ms(est.DurationMS.Est)-now.Sub(lp.started), 0)
		sum += left
		longest = max(longest, left)
	}
	for _, name := range v.phases {
		if running[name] || v.rows[name] != nil {
			continue
		}
		if est := v.ests[name]; est.Known() {
			sum += ms(est.DurationMS.Est)
		} else if est != nil {
			unknown++
		}
	}
	left := sum
	if v.jobs > 0 {
		left = max(longest, sum/time.Duration(v.jobs))
	}
	if unknown > 0 {
		return "eta ≥" + FormatDuration(left)
	}
	return "eta ~" + FormatDuration(left)
}
