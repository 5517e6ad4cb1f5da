package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfiles starts the profiles that developers ask for through the
// environment (CAIRN_CPUPROFILE=FILE, CAIRN_MEMPROFILE=FILE), for reading
// with `go tool pprof`. It returns the function that finishes them; with
// neither variable set it does nothing.
func startProfiles() func() {
	cpu, mem := os.Getenv("CAIRN_CPUPROFILE"), os.Getenv("CAIRN_MEMPROFILE")
	if cpu == "" && mem == "" {
		return func() {}
	}
	if mem != "" {
		// Sample every 4 KiB allocated (the default, 512 KiB, sees
		// little of a run that allocates a few megabytes).
		runtime.MemProfileRate = 4096
	}
	var cpuFile *os.File
	if cpu != "" {
		f, err := os.Create(cpu)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "cairn: CAIRN_CPUPROFILE: %v\n", err)
		} else {
			cpuFile = f
		}
	}
	return func() {
		if cpuFile != nil {
			pprof.StopCPUProfile()
			cpuFile.Close()
		}
		if mem != "" {
			f, err := os.Create(mem)
			if err == nil {
				runtime.GC()
				err = pprof.WriteHeapProfile(f)
				f.Close()
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "cairn: CAIRN_MEMPROFILE: %v\n", err)
			}
		}
	}
}
