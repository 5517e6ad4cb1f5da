package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/spec"
)

// TestAdmission replays what phases report to the scheduler and checks
// what admission starts, grants and lets be acted on, in what order.
//
// Each step is "command args" or, for a command with a result,
// "command args: result". Commands: ready ADDR... (phases became ready);
// admit (start what may start: ADDR holds a slot, ~ADDR decides ahead);
// answer (the phases asking: ADDR+ granted, ADDR- refused); ask ADDR;
// yield ADDR (gives its slot back to wait for its upstreams); free ADDR
// (its command ended, it stores its outputs); over ADDR / fail ADDR (the
// phase is over, succeeded or not: the phases whose end is acted on now,
// in order); release ADDR (its dependents may start: the held phases now
// acted on); close / open (whether a new command may start); running
// (the phases holding a slot). After every step, no more than jobs phases
// hold a slot and no pool gives more units than it holds.
func TestAdmission(t *testing.T) {
	gpu := map[string]int{"gpu": 1}
	tests := []struct {
		name   string
		jobs   int
		window int
		pools  map[string]int
		units  map[string]map[string]int
		steps  []string
	}{
		{
			name: "slots first, then up to window phases decide ahead",
			jobs: 2, window: 2,
			steps: []string{
				"ready a b c d e",
				"admit: a b ~c ~d",
				"over c: c", // found cached without a slot
				"admit: ~e",
				"admit:",
				"over a: a",
				"admit:", // the free slot is kept for d or e, which may ask
				"running: 1",
			},
		},
		{
			name: "a phase deciding ahead that would fit keeps a free slot from one started after it",
			jobs: 2, window: 2,
			steps: []string{
				"ready a b c d",
				"admit: a b ~c ~d",
				"over a: a",
				"ask d",
				"answer:", // c, started before d, may still ask
				"over c: c",
				"answer: d+",
				"running: 2",
				"over d: d",
				"over b: b",
				"running: 0",
			},
		},
		{
			name: "phases deciding ahead get slots in the order they started",
			jobs: 1, window: 2,
			steps: []string{
				"ready a b c",
				"admit: a ~b ~c",
				"ask c",
				"answer:",
				"over a: a",
				"answer:", // b may still ask: the slot is its
				"ask b",
				"answer: b+",
				"over b: b",
				"answer: c+",
				"over c: c",
				"running: 0",
			},
		},
		{
			name: "-j 1: a phase done ahead is held until those started before it are done",
			jobs: 1, window: 2,
			steps: []string{
				"ready a b c",
				"admit: a ~b ~c",
				"over c:",
				"over b:",
				"over a: a b c",
			},
		},
		{
			name: "-j 1: a failure is not held",
			jobs: 1, window: 2,
			steps: []string{
				"ready a b c",
				"admit: a ~b ~c",
				"fail c: c",
				"over b:",
				"over a: a b",
			},
		},
		{
			name: "-j 1: a released phase lets those held behind it go",
			jobs: 1, window: 2,
			steps: []string{
				"ready a b",
				"admit: a ~b",
				"over b:",
				"release a: b",
				"over a: a",
			},
		},
		{
			name: "with -j 2 nothing is held",
			jobs: 2, window: 2,
			steps: []string{
				"ready a b c",
				"admit: a b ~c",
				"over c: c",
			},
		},
		{
			name: "a phase whose pool is full decides ahead; a later one without takes a slot",
			jobs: 4, window: 1,
			pools: map[string]int{"gpu": 1},
			units: map[string]map[string]int{"g1": gpu, "g2": gpu, "g3": gpu},
			steps: []string{
				"ready g1 g2 g3 c",
				"admit: g1 ~g2 c", // g3 is passed over: its pool is full and the window too
				"ask g2",
				"answer:",
				"over g1: g1",
				"answer: g2+",
				"admit: ~g3", // no phase decides ahead any more
				"ask g3",
				"answer:", // the pool is full again
				"over g2: g2",
				"answer: g3+",
				"running: 2",
			},
		},
		{
			name: "pool units are given back while a phase stores its outputs or waits for its upstreams",
			jobs: 4, window: 1,
			pools: map[string]int{"gpu": 1},
			units: map[string]map[string]int{"g1": gpu, "g2": gpu, "g3": gpu},
			steps: []string{
				"ready g1",
				"admit: g1",
				"free g1",
				"ready g2",
				"admit: g2",
				"yield g2",
				"ready g3",
				"admit: g3",
				"ask g2",
				"answer:",
				"over g3: g3",
				"answer: g2+",
				"over g1: g1", // its units were given back already: not twice
				"running: 1",
				"over g2: g2",
				"running: 0",
			},
		},
		{
			name: "a phase asking for its slot back comes before one that decided ahead",
			jobs: 1, window: 1,
			steps: []string{
				"ready a b",
				"admit: a ~b",
				"yield a",
				"ask b",
				"ask a",
				"answer: a+", // b's ask came first, but a held a slot already
				"over a: a",
				"answer: b+",
			},
		},
		{
			name: "once no new command may start, askers are refused and nothing starts",
			jobs: 1, window: 2,
			steps: []string{
				"ready a b c",
				"admit: a ~b ~c",
				"yield a",
				"ask a",
				"ask b",
				"close",
				"answer: a- b-",
				"ready d",
				"admit:",
				"over c:", // held behind a
				"fail a: a",
				"fail b: b c",
				"open",
				"admit: d",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pools := map[string]*spec.Pool{}
			for n, size := range tt.pools {
				pools[n] = &spec.Pool{Size: size}
			}
			a := newAdmission(tt.jobs, tt.window, pools, unitsOnly(tt.units))
			open := true
			gate := func() bool { return open }
			var got, want []string
			for _, step := range tt.steps {
				want = append(want, step)
				cmd, _, _ := strings.Cut(step, ":")
				f := strings.Fields(cmd)
				var res []string
				switch f[0] {
				case "ready":
					a.ready(f[1:])
				case "admit":
					a.admit(gate, func(addr string, slot bool) {
						if slot {
							res = append(res, addr)
						} else {
							res = append(res, "~"+addr)
						}
					})
				case "answer":
					for _, g := range a.answer(gate) {
						if g.granted {
							res = append(res, g.addr+"+")
						} else {
							res = append(res, g.addr+"-")
						}
					}
				case "ask":
					a.ask(f[1])
				case "yield":
					a.yield(f[1])
				case "free":
					a.slotFree(f[1])
				case "over", "fail":
					if a.over(f[1], f[0] == "over") {
						res = append(res, f[1])
						res = append(res, a.leave(f[1])...)
					}
				case "release":
					res = append(res, a.leave(f[1])...)
				case "close":
					open = false
				case "open":
					open = true
				case "running":
					res = []string{fmt.Sprint(a.running)}
				default:
					t.Fatalf("unknown step %q", step)
				}
				line := cmd
				if strings.Contains(step, ":") {
					line = strings.TrimSpace(cmd + ": " + strings.Join(res, " "))
				}
				got = append(got, line)
				if a.running < 0 || a.running > tt.jobs {
					t.Fatalf("after %q: %d phases hold a slot, jobs %d", step, a.running, tt.jobs)
				}
				for n, used := range a.pools.used {
					if used < 0 || used > tt.pools[n] {
						t.Fatalf("after %q: pool %s gives %d units, holds %d", step, n, used, tt.pools[n])
					}
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

// unitsOnly are phases that have nothing but their pool units.
type unitsOnly map[string]map[string]int

func (u unitsOnly) Phase(addr string) *spec.Phase { return &spec.Phase{Addr: addr, Resources: u[addr]} }
