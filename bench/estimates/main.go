// Command estimates checks cairn plan's estimates against what a run then
// takes and spends. It records a sweep (a prepare phase, -n instances of
// varied durations and costs, a summary), then changes every instance's
// duration and cost by up to ±jitter and adds -new instances, plans the
// second sweep with --json, runs it, and prints each phase's estimate
// beside its actual duration and cost (from the run's state.json), and the
// totals.
//
//	go run ./bench/estimates [-n 24] [-new 4] [-jitter 0.2] [-j 4]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/runrec"
)

func main() {
	n := flag.Int("n", 24, "instances in the recorded sweep")
	added := flag.Int("new", 4, "instances the second sweep adds (no history of their own)")
	jitter := flag.Float64("jitter", 0.2, "how much each duration and cost changes between the sweeps, at most (0.2: ±20%)")
	jobs := flag.Int("j", 4, "phases run at once")
	bin := flag.String("cairn", "", "cairn binary (default: built from the tree)")
	flag.Parse()
	if err := run(*n, *added, *jitter, *jobs, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "estimates:", err)
		os.Exit(1)
	}
}

// instance is one sweep instance's sleep and reported cost.
type instance struct {
	ms   int
	cost float64
}

func run(n, added int, jitter float64, jobs int, bin string) error {
	tmp, err := os.MkdirTemp("", "cairn-estimates-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if bin == "" {
		bin = filepath.Join(tmp, "cairn")
		build := exec.Command("go", "build", "-o", bin, "./cmd/cairn")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build cairn: %w", err)
		}
	}
	ws := filepath.Join(tmp, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	cairn := func(args ...string) ([]byte, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "CAIRN_CACHE_DIR="+filepath.Join(tmp, "cache"))
		cmd.Stderr = os.Stderr
		return cmd.Output()
	}
	rng := rand.New(rand.NewPCG(26, 2))
	// Durations from 50 ms to 800 ms, costs from 0.01 to 1, independent.
	base := make([]instance, n+added)
	for i := range base {
		base[i] = instance{ms: 50 + rng.IntN(750), cost: float64(1+rng.IntN(100)) / 100}
	}
	first := base[:n]
	second := make([]instance, n+added)
	for i, b := range base {
		f := 1 + jitter*(2*rng.Float64()-1)
		g := 1 + jitter*(2*rng.Float64()-1)
		second[i] = instance{ms: int(float64(b.ms) * f), cost: float64(int(b.cost*g*100+0.5)) / 100}
	}
	if err := writeSpec(ws, 1, first, jobs); err != nil {
		return err
	}
	if _, err := cairn("run", "-q"); err != nil {
		return fmt.Errorf("first sweep: %w", err)
	}
	if err := writeSpec(ws, 2, second, jobs); err != nil {
		return err
	}
	out, err := cairn("plan", "--json")
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	var plan engine.PlanResult
	if err := json.Unmarshal(out, &plan); err != nil {
		return fmt.Errorf("plan --json: %w", err)
	}
	start := time.Now()
	if _, err := cairn("run", "-q"); err != nil {
		return fmt.Errorf("second sweep: %w", err)
	}
	wall := time.Since(start)
	st, err := runrec.Dir(filepath.Join(ws, ".cairn", "runs")).FindRun("")
	if err != nil {
		return err
	}
	report(&plan, st, wall, n, added, jitter)
	return nil
}

// writeSpec writes the sweep of a round: prepare, the instances, a
// summary reading them all.
func writeSpec(ws string, round int, inst []instance, jobs int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "experiment \"estimates\" {\n  concurrency = %d\n}\n", jobs)
	fmt.Fprintf(&b, "phase \"prepare\" {\n  command = \"sleep 0.%03d; echo '{\\\"cost\\\": 0.05}' >> $CAIRN_REPORT; echo %d > prep.txt\"\n  outputs = { d = \"prep.txt\" }\n}\n", 200+round*20, round)
	b.WriteString("phase \"sweep\" {\n  for_each = {\n")
	for i, in := range inst {
		fmt.Fprintf(&b, "    s%02d = { sec = \"%d.%03d\", cost = %g }\n", i, in.ms/1000, in.ms%1000, in.cost)
	}
	b.WriteString("  }\n")
	b.WriteString("  command = \"sleep ${each.value.sec}; echo '{\\\"cost\\\": ${each.value.cost}, \\\"iterations\\\": 10}' >> $CAIRN_REPORT; cat ${phase.prepare.outputs.d} > s-${each.key}.txt\"\n")
	b.WriteString("  outputs = { r = \"s-${each.key}.txt\" }\n}\n")
	b.WriteString("phase \"summary\" {\n  command = \"sleep 0.1; cat s-*.txt > summary.txt\"\n  depends_on = [phase.sweep]\n  outputs = { s = \"summary.txt\" }\n}\n")
	return os.WriteFile(filepath.Join(ws, "experiment.hcl"), []byte(b.String()), 0o644)
}

func report(plan *engine.PlanResult, st *runrec.RunState, wall time.Duration, n, added int, jitter float64) {
	fmt.Printf("recorded sweep: %d instances; new sweep: durations and costs changed by up to ±%.0f%%, %d instances added\n\n", n, jitter*100, added)
	fmt.Printf("%-12s %-9s %20s %9s %7s %16s %7s %7s\n", "phase", "source", "est ms (min–max)", "actual", "err", "est cost", "actual", "err")
	var absMS, absCost float64
	var known int
	var actMS int64
	var actCost float64
	for _, d := range plan.Decisions {
		ps := st.Phases[d.Phase]
		if ps == nil {
			continue
		}
		actMS += ps.DurationMS
		actCost += ps.Cost
		est := d.Estimate
		if !est.Known() {
			fmt.Printf("%-12s %-9s %20s %9d %7s %16s %7.2f\n", d.Phase, "unknown", "", ps.DurationMS, "", "", ps.Cost)
			continue
		}
		known++
		em := est.DurationMS
		errMS := pct(float64(em.Est), float64(ps.DurationMS))
		errCost := pct(est.Cost.Est, ps.Cost)
		absMS += abs(errMS)
		absCost += abs(errCost)
		fmt.Printf("%-12s %-9s %20s %9d %+6.0f%% %16s %7.2f %+6.0f%%\n", d.Phase, est.Source,
			fmt.Sprintf("%d (%d–%d)", em.Est, em.Min, em.Max), ps.DurationMS, errMS,
			fmt.Sprintf("%.2f (%.2f–%.2f)", est.Cost.Est, est.Cost.Min, est.Cost.Max), ps.Cost, errCost)
	}
	t := plan.Estimate
	fmt.Printf("\ntotal phase time: est %d ms (%d–%d), actual %d ms (%+.1f%%)\n", t.DurationMS.Est, t.DurationMS.Min, t.DurationMS.Max, actMS, pct(float64(t.DurationMS.Est), float64(actMS)))
	fmt.Printf("total cost:       est %.2f (%.2f–%.2f), actual %.2f (%+.1f%%)\n", t.Cost.Est, t.Cost.Min, t.Cost.Max, actCost, pct(t.Cost.Est, actCost))
	fmt.Printf("wall time:        est %d ms with %d jobs, actual %d ms (cairn run, start to end) (%+.1f%%)\n", t.WallMS, t.Jobs, wall.Milliseconds(), pct(float64(t.WallMS), float64(wall.Milliseconds())))
	if known > 0 {
		fmt.Printf("mean absolute error per phase over %d estimated phases: duration %.1f%%, cost %.1f%%; %d phases unknown\n", known, absMS/float64(known), absCost/float64(known), t.Unknown)
	}
}

// pct is how far est is from actual, in percent of actual.
func pct(est, actual float64) float64 {
	if actual == 0 {
		return 0
	}
	return 100 * (est - actual) / actual
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
