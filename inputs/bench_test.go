//go:build linux

package inputs

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/spec"
)

// BenchmarkDirectoryInput finds the files of a directory input of 20,000
// files of 1 KiB in 20 directories: noop is what a run with nothing
// changed does (walk and fingerprint), cold what a first run does (walk
// and hash every file, the memory empty: coldfound as the engine does,
// each file hashed as the walk finds it; cold walking first and hashing
// after); with the allocations and bytes allocated per file.
func BenchmarkDirectoryInput(b *testing.B) {
	const n = 20000
	root := b.TempDir()
	content := make([]byte, 1024)
	for i := range n {
		p := filepath.Join(root, "in", fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%06d", i))
		if i < 20 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		content[0] = byte(i)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	p := &spec.Phase{Addr: "p", Inputs: []string{"in"}}
	for _, mode := range []string{"noop", "cold", "coldfound"} {
		b.Run(mode, func(b *testing.B) {
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for b.Loop() {
				f := newFinder(root, runtime.GOMAXPROCS(0))
				var (
					files   []File
					digests []cache.Digest
					err     error
				)
				if mode == "coldfound" {
					files, digests, _, err = f.FilesDigested(p, nil)
				} else {
					files, _, err = f.Files(p, nil)
				}
				if err != nil || len(files) != n {
					b.Fatalf("%d files, %v", len(files), err)
				}
				g := &Gathered{Files: files}
				if mode == "noop" {
					g.Fingerprint(nil)
					continue
				}
				if err := f.Digests("p", files, digests, func(int, cache.Digest) {}); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&m1)
			ops := float64(b.N)
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/ops/n, "allocs/file")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/ops/n, "B/file")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/ops/n, "ns/file")
		})
	}
}
