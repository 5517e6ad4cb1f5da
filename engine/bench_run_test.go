package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/spec"
)

// BenchmarkRunCold runs a generated layered spec of 30 phases (each
// `cat` of an input and two upstream outputs into a file, through sh)
// from nothing: no outputs, no run records, an empty cache, with two
// jobs. Reported per run; ns/phase is the figure to compare with make.
func BenchmarkRunCold(b *testing.B) {
	const n = 30
	dir := b.TempDir()
	genLayered(b, dir, n, 5)
	sp, diags := spec.NewParser().LoadFile(filepath.Join(dir, "experiment.hcl"), spec.Options{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	caches := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for _, d := range []string{"out", ".cairn"} {
			if err := os.RemoveAll(filepath.Join(dir, d)); err != nil {
				b.Fatal(err)
			}
		}
		c, err := cache.Open(filepath.Join(caches, "c"+string(rune('a'+i%26))+filepath.Base(b.TempDir())))
		if err != nil {
			b.Fatal(err)
		}
		e := New(sp, local(c), Config{Executor: &LocalExecutor{}})
		b.StartTimer()
		res, err := e.Run(b.Context(), RunOptions{Request: runrec.Request{Jobs: 2}})
		if err != nil || res.Status != runrec.RunSucceeded {
			b.Fatalf("run: %v %v", err, res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/phase")
}
