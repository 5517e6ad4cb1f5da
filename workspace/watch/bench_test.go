//go:build linux

package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

const benchDirs, benchFilesPerDir = 1000, 10

// benchTree makes benchDirs directories of benchFilesPerDir files on the
// disk and returns them open.
func benchTree(b *testing.B) []*os.File {
	b.Helper()
	root := b.TempDir()
	dirs := make([]*os.File, benchDirs)
	for i := range dirs {
		d := filepath.Join(root, fmt.Sprint(i))
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := range benchFilesPerDir {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprint(j)), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		f, err := os.Open(d)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		dirs[i] = f
	}
	return dirs
}

// BenchmarkDir is what watching adds to a walk: a watch per directory
// ("dir"), the check after the command ("check"), and the release
// ("close"), each timed alone.
func BenchmarkDir(b *testing.B) {
	dirs := benchTree(b)
	for _, part := range []string{"dir", "check", "close"} {
		b.Run(part, func(b *testing.B) {
			b.ReportAllocs()
			var cpu cpuTimer
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				w := New()
				if part == "dir" {
					cpu.start(b)
				}
				for _, d := range dirs {
					w.Dir(d)
				}
				cpu.stop(b)
				if part == "check" {
					cpu.start(b)
				}
				if err := w.Check(); err != nil {
					b.Fatal(err)
				}
				cpu.stop(b)
				if part == "close" {
					cpu.start(b)
				}
				w.Close()
				cpu.stop(b)
			}
			cpu.report(b)
		})
	}
}

// BenchmarkStatWalk is what a quiet watch saves: reading every directory
// again and statting each file in it.
func BenchmarkStatWalk(b *testing.B) {
	dirs := benchTree(b)
	b.ResetTimer()
	b.ReportAllocs()
	var cpu cpuTimer
	cpu.start(b)
	for i := 0; i < b.N; i++ {
		for _, d := range dirs {
			f, err := os.Open(d.Name())
			if err != nil {
				b.Fatal(err)
			}
			names, err := f.Readdirnames(-1)
			if err != nil {
				b.Fatal(err)
			}
			var st unix.Stat_t
			for _, n := range names {
				if err := unix.Fstatat(int(f.Fd()), n, &st, 0); err != nil {
					b.Fatal(err)
				}
			}
			f.Close()
		}
	}
	cpu.stop(b)
	cpu.report(b)
}

// cpuTimer adds the process's CPU time (user and system) to the
// benchmark's timer: on a shared machine wall time says little.
type cpuTimer struct {
	running bool
	at, sum int64
}

func cpuNow(b *testing.B) int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func (c *cpuTimer) start(b *testing.B) {
	b.StartTimer()
	c.running, c.at = true, cpuNow(b)
}

func (c *cpuTimer) stop(b *testing.B) {
	if c.running {
		c.sum += cpuNow(b) - c.at
		c.running = false
	}
	b.StopTimer()
}

// report gives wall and CPU time per directory.
func (c *cpuTimer) report(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchDirs), "ns/dir")
	b.ReportMetric(float64(c.sum)/float64(b.N*benchDirs), "cpu-ns/dir")
}
