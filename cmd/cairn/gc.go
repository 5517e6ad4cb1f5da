package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// A cairn process is short-lived, and most commands (a no-op run, a plan)
// allocate a few tens of MiB that stay live until it exits: collecting
// them early is wasted work (a fifth of a no-op run of 1,000 phases with
// Go's default GOGC=100). So cairn starts with the collector off below a
// soft memory limit, and after each collection looks at the live heap:
// once it is past half the limit the work is large (a plan of 100,000
// instances), and the ordinary proportional collector takes over, so
// memory grows with the live heap and never thrashes against the limit.
const (
	gcStartLimit   = 40 << 20 // total Go memory before the first collection
	gcNormalAtLive = gcStartLimit / 2
)

// tuneGC applies that policy, unless the user chose GOGC or GOMEMLIMIT.
func tuneGC() {
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
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		if s[0].Value.Kind() == metrics.KindUint64 && s[0].Value.Uint64() < gcNormalAtLive {
			armGCWatch()
			return
		}
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	})
}
