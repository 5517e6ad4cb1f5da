package main

import (
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// gcGarbage holds what TestGCPolicy allocates as garbage, so that the
// compiler cannot drop the allocation.
var gcGarbage []byte

// gcPercent reads the collector's GOGC setting.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// TestGCPolicy: the collector starts off under the start limit, becomes
// the ordinary one once the live heap outgrows that limit, and lets the
// heap grow to five times a large live heap. It runs in a process of its
// own: the policy is the whole process's, and its watch stays armed.
func TestGCPolicy(t *testing.T) {
	if os.Getenv("CAIRN_TEST_GC_POLICY") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGCPolicy$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "CAIRN_TEST_GC_POLICY=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestGCPolicy") {
			t.Fatalf("the policy's process: %v\n%s", err, out)
		}
		return
	}
	// gcHeap reports the heap the last collection found live, not the
	// garbage allocated since: a finalizer reading the heap in use took
	// a busy load's fresh garbage for live heap. No limit either (the
	// environment's GOMEMLIMIT would collect the garbage as it comes).
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(math.MaxInt64)
	runtime.GC()
	for range 40 {
		gcGarbage = make([]byte, 1<<20)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if live, _ := gcHeap(); ms.HeapAlloc < 40<<20 || live > 20<<20 {
		t.Fatalf("after 40 MiB of garbage: heap in use %d MiB, gcHeap's live heap %d MiB (want under 20)", ms.HeapAlloc>>20, live>>20)
	}
	gcGarbage = nil

	debug.SetMemoryLimit(gcStartLimit)
	armGCWatch()

	// collectUntil collects until the setting is want (the watch runs
	// as a finalizer, after a collection), or fails.
	collectUntil := func(want int) {
		t.Helper()
		for range 200 {
			runtime.GC()
			runtime.Gosched()
			if gcPercent() == want {
				return
			}
		}
		t.Fatalf("GOGC is %d, want %d", gcPercent(), want)
	}
	var live [][]byte
	grow := func(mib int) {
		for range mib {
			b := make([]byte, 1<<20)
			b[0] = 1
			live = append(live, b)
		}
	}
	grow(30) // over the start limit's room: the ordinary collector
	collectUntil(100)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit %d after the start, want none", got)
	}
	grow(gcLargeLive>>20 + 10) // a large live heap: five times it
	collectUntil(gcLargePct)
	if got := debug.SetMemoryLimit(-1); got != gcLargeLimit {
		t.Errorf("memory limit %d for a large heap, want %d", got, gcLargeLimit)
	}
	runtime.KeepAlive(live)
}
