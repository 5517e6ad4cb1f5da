package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-run/cairn/internal/testkit"
)

// deathSpec: four phases running at once. Two are shell scripts that
// leave a background grandchild; two exec their workload, which is then
// cairn's direct child. Once release exists they finish at once.
const deathSpec = `
phase "sh1" {
  command = <<-SH
    if [ -e release ]; then echo sh1 > sh1.txt; exit 0; fi
    echo $$ > pid.sh1
    sleep 300 &
    echo $! > gc.sh1
    touch started.sh1
    wait
  SH
  outputs = ["sh1.txt"]
}

phase "sh2" {
  command = <<-SH
    if [ -e release ]; then echo sh2 > sh2.txt; exit 0; fi
    echo $$ > pid.sh2
    sleep 300 &
    echo $! > gc.sh2
    touch started.sh2
    wait
  SH
  outputs = ["sh2.txt"]
}

phase "ex1" {
  command = ["sh", "-c", "if [ -e release ]; then echo ex1 > ex1.txt; exit 0; fi; echo $$ > pid.ex1; touch started.ex1; exec sleep 300"]
  outputs = ["ex1.txt"]
}

phase "ex2" {
  command = ["sh", "-c", "if [ -e release ]; then echo ex2 > ex2.txt; exit 0; fi; echo $$ > pid.ex2; touch started.ex2; exec sleep 300"]
  outputs = ["ex2.txt"]
}
`

// TestRunnerDeath is T23: cairn is SIGKILLed while four phases run. Its
// direct children die with it (Pdeathsig); grandchildren they started
// are orphans until the next run in the workspace, which kills every
// process carrying the dead run's id before it schedules anything. The
// census finds none of them once the next run is over, and that run
// completes the work.
func TestRunnerDeath(t *testing.T) {
	rounds := 1
	if longTier() {
		rounds = 10
	}
	var after1s []int
	for round := 0; round < rounds; round++ {
		w := newRelWS(t, deathSpec)
		var out bytes.Buffer
		cmd := w.cmd(&out, "run", "-j", "4")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.waitFiles("started.sh1", "started.sh2", "started.ex1", "started.ex2")
		dead := w.latest()
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		killedAt := time.Now()

		pidOf := func(name string) int {
			n, err := strconv.Atoi(strings.TrimSpace(w.read(name)))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return n
		}
		direct := []int{pidOf("pid.sh1"), pidOf("pid.sh2"), pidOf("pid.ex1"), pidOf("pid.ex2")}
		for _, pid := range direct {
			// Pdeathsig acts at once; 2s leaves room for a loaded machine.
			for alive(pid) && time.Since(killedAt) < 2*time.Second {
				time.Sleep(5 * time.Millisecond)
			}
			if alive(pid) {
				t.Errorf("phase process %d still runs 2s after cairn was killed", pid)
			}
		}
		for time.Since(killedAt) < time.Second {
			time.Sleep(10 * time.Millisecond)
		}
		left := testkit.Procs("CAIRN_RUN_ID=" + dead.RunID)
		after1s = append(after1s, len(left))
		// Only the shell phases' grandchildren may be left.
		if len(left) > 2 {
			t.Errorf("1s after cairn was killed, %d processes of its run remain, want at most the 2 grandchildren: %s", len(left), strings.Join(left, ", "))
		}

		w.write("release", "")
		w.mustRun("run")
		if left := testkit.Procs("CAIRN_RUN_ID=" + dead.RunID); len(left) > 0 {
			t.Errorf("after the next run, processes of the killed run remain: %s", strings.Join(left, ", "))
		}
		for _, gc := range []string{"gc.sh1", "gc.sh2"} {
			if pid := pidOf(gc); alive(pid) {
				t.Errorf("grandchild %d (%s) survived the next run", pid, gc)
			}
		}
		st := w.states()
		if len(st) != 2 || st[0].Status != "interrupted" || st[1].Status != "succeeded" {
			var got []string
			for _, s := range st {
				got = append(got, s.Status)
			}
			t.Errorf("runs %v, want [interrupted succeeded]", got)
		}
		for _, n := range []string{"sh1", "sh2", "ex1", "ex2"} {
			if got := w.read(n + ".txt"); got != n+"\n" {
				t.Errorf("%s.txt = %q", n, got)
			}
		}
	}
	t.Logf("FIGURE T23 rounds=%d direct_children_after_1s=0 survivors_after_1s=%v survivors_after_resume=0", rounds, after1s)
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	return !bytes.Contains(b, []byte(") Z "))
}
