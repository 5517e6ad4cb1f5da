package engine

import (
	"github.com/cairn-run/cairn/executor/local"
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
		e := New(sp, tiered(c), Config{Executor: &local.Executor{}})
		b.StartTimer()
		res, err := e.Run(b.Context(), RunOptions{Request: runrec.Request{Jobs: 2}})
		if err != nil || res.Status != runrec.RunSucceeded {
			b.Fatalf("run: %v %v", err, res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/phase")
}

// BenchmarkRunNoop runs a generated layered spec of 300 phases whose
// outputs are in place and cached: the no-op run, where every phase is
// decided and found cached without holding a job slot.
func BenchmarkRunNoop(b *testing.B) {
	const n = 300
	dir := b.TempDir()
	genLayered(b, dir, n, 20)
	sp, diags := spec.NewParser().LoadFile(filepath.Join(dir, "experiment.hcl"), spec.Options{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	c, err := cache.Open(filepath.Join(b.TempDir(), "cache"))
	if err != nil {
		b.Fatal(err)
	}
	run := func() {
		res, err := New(sp, tiered(c), Config{Executor: &local.Executor{}}).Run(b.Context(), RunOptions{Request: runrec.Request{Jobs: 2}})
		if err != nil || res.Status != runrec.RunSucceeded {
			b.Fatalf("run: %v %v", err, res)
		}
	}
	run()
	run() // the memories are warm from here on
	b.ResetTimer()
	for b.Loop() {
		run()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/phase")
}
