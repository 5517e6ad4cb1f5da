// Package cores says how many goroutines of CPU work cairn runs at once,
// and lets cairn give the Go runtime more processors (Ps) than that for
// the goroutines that wait in system calls.
//
// A goroutine blocked in a system call keeps its P until the runtime's
// monitor takes it back, which can take milliseconds; a fork keeps it
// until the child has called exec. With one P per core, the goroutines
// that wait for a phase's command to exit (waitid) and those starting the
// next one (vfork) hold every P while the scheduler goroutine, ready to
// hand a freed job slot on, waits for one: with many tiny phases a freed
// slot would stay empty for a good part of the time it is held. Two more
// Ps let the scheduler hand it on at once.
package cores

import (
	"os"
	"runtime"
	"strconv"
	"sync"
)

// N is how many goroutines may do CPU work at once: the runtime's default
// GOMAXPROCS (the CPUs cairn may use, its cgroup's quota included), or
// GOMAXPROCS if the user set it. Parallel CPU work (parsing, compressing,
// deciding ahead) is sized by N, not by the raised GOMAXPROCS.
var N = runtime.GOMAXPROCS(0)

// Extra is how many Ps RaiseProcs adds to N.
const Extra = 2

// RaiseProcs sets GOMAXPROCS to N+Extra, once, unless the user set
// GOMAXPROCS or it is no longer N (the program, go test -cpu or the
// runtime changed it since cairn started). The engine calls it when a run
// starts its first command: a run that only decides (a no-op) keeps one P
// per core, its goroutines seldom block, and it measured no gain from more.
func RaiseProcs() {
	raise.Do(func() {
		if p, ok := procs(os.LookupEnv, runtime.GOMAXPROCS(0)); ok {
			runtime.GOMAXPROCS(p)
		}
	})
}

var raise sync.Once

// procs is the GOMAXPROCS RaiseProcs sets, and false if it leaves it;
// current is GOMAXPROCS now. A GOMAXPROCS in the environment counts as
// the user's when the runtime took it: a positive number.
func procs(lookupEnv func(string) (string, bool), current int) (int, bool) {
	if v, set := lookupEnv("GOMAXPROCS"); set {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return 0, false
		}
	}
	if current != N {
		return 0, false
	}
	return N + Extra, true
}
