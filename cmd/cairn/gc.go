package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
)

// A cairn process is short-lived, and most commands (a no-op run, a plan)
// allocate a few tens of MiB, much of which stays live until it exits:
// collecting early is wasted work (a fifth of a no-op run of 1,000 phases
// with Go's default GOGC=100). So cairn starts with the proportional
// collector off, under a soft memory limit, and after each collection
// compares the heap goal the limit leaves with the live heap: once the
// goal is under 1.5 times the live heap (the work is large, a plan of
// 100,000 instances, or the limit is tight), the ordinary collector takes
// over, so the collector never runs more often than GOGC=50 would make it
// and memory grows with the live heap rather than thrashing at the limit.
const gcStartLimit = 36 << 20 // total Go memory: peak RSS stays under 50 MiB

// tuneGC applies that policy, unless the user chose GOGC or GOMEMLIMIT.
// It also turns off heap profiling (its buckets cost a large spec's run
// 1.5 MB) unless CAIRN_MEMPROFILE asks for a profile.
func tuneGC() {
	if os.Getenv("CAIRN_MEMPROFILE") == "" {
		runtime.MemProfileRate = 0
	}
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(gcStartLimit)
	armGCWatch()
}

// gcSentinel is garbage as soon as it is made; its finalizer runs after
// the next collection (it is big enough to never share a tiny block).
type gcSentinel struct{ _ [64]byte }

func armGCWatch() {
	runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
		// Just after a collection the heap in use is about the live
		// heap. (ReadMemStats, not package runtime/metrics, whose init
		// cost every start of cairn 50 µs.)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if live, goal := ms.HeapAlloc, ms.NextGC; goal >= live+live/2 {
			armGCWatch()
			return
		}
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	})
}
