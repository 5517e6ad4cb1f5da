package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
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
//
// A live heap of over gcLargeLive is a large spec being loaded or planned
// (a sweep of 100,000 instances holds 200-300 MiB, and allocates about
// 1 GB on the way): collecting it at GOGC=100 took a quarter of its first
// plan's CPU, at GOGC=200 still a sixth. The collector then lets the heap
// grow to five times the live heap, up to gcLargeLimit; when the live
// heap comes near that limit (the goal under 1.5 times the live heap
// again), the ordinary collector takes over for good.
const (
	gcStartLimit = 36 << 20 // total Go memory: peak RSS stays under 50 MiB
	gcLargeLive  = 48 << 20
	gcLargePct   = 400
	gcLargeLimit = 800 << 20 // with the runtime's own memory, RSS under 1 GiB
)

// tuneGC applies that policy, unless the user chose GOGC or GOMEMLIMIT.
// It also turns off heap profiling (its buckets cost memory for every
// allocation site a large spec's run reaches) unless CAIRN_MEMPROFILE asks
// for a profile.
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
	watchGC(func(live, goal uint64) bool {
		if goal >= live+live/2 {
			return true
		}
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		watchGC(func(live, _ uint64) bool {
			if live < gcLargeLive {
				return true
			}
			debug.SetGCPercent(gcLargePct)
			debug.SetMemoryLimit(gcLargeLimit)
			watchGC(func(live, goal uint64) bool {
				if goal >= live+live/2 {
					return true
				}
				debug.SetGCPercent(100)
				debug.SetMemoryLimit(math.MaxInt64)
				return false
			})
			return false
		})
		return false
	})
}

// watchGC calls f with the live heap and the next heap goal after the
// next collection, and after every one that follows while f returns true.
func watchGC(f func(live, goal uint64) bool) {
	runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
		if f(gcHeap()) {
			watchGC(f)
		}
	})
}

// gcHeap returns the heap the last collection found live and the heap
// goal of the next one. Not runtime.MemStats' HeapAlloc: the finalizer
// that asks may run long after the collection, when a busy process has
// allocated tens of MiB of new garbage, and taking that for live heap
// would hand a small live heap the policy of a large one. (Package
// runtime/metrics has a cost at its first read, paid only by a process
// that collects.)
func gcHeap() (live, goal uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}
