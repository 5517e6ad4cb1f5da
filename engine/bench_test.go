package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/spec"
)

// genLayered writes a layered spec of n phases (width phases per layer),
// each reading two phases of the layer before and one input file, plus
// the input files, into dir.
func genLayered(tb testing.TB, dir string, n, width int) {
	tb.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		in := fmt.Sprintf("in/f%04d.txt", i)
		if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, in), []byte(fmt.Sprintf("input %d\n", i)), 0o644); err != nil {
			tb.Fatal(err)
		}
		deps := ""
		if layer := i / width; layer > 0 {
			a := (layer-1)*width + i%width
			c := (layer-1)*width + (i+1)%width
			deps = fmt.Sprintf(" ${phase.p%d.outputs[0]} ${phase.p%d.outputs[0]}", a, c)
		}
		fmt.Fprintf(&b, "phase \"p%d\" {\n  command = \"cat %s%s > out/p%d.txt\"\n  inputs  = [%q]\n  outputs = [\"out/p%d.txt\"]\n}\n\n", i, in, deps, i, in, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "experiment.hcl"), []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkLoadAndPlan1000 loads and plans a generated 1,000-phase spec
// whose inputs are already in the digest memory (the no-op planning path).
func BenchmarkLoadAndPlan1000(b *testing.B) {
	dir := b.TempDir()
	genLayered(b, dir, 1000, 50)
	c, err := cache.Open(filepath.Join(b.TempDir(), "cache"))
	if err != nil {
		b.Fatal(err)
	}
	load := func() *Engine {
		sp, diags := spec.NewParser().LoadFile(filepath.Join(dir, "experiment.hcl"), spec.Options{})
		if diags.HasErrors() {
			b.Fatal(diags.Error())
		}
		return New(sp, tiered(c), Config{})
	}
	// Warm the digest memory once.
	e := load()
	if _, err := e.Plan(PlanOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := e.mem.Save(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		e := load()
		plan, err := e.Plan(PlanOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if plan.Run != 1000 {
			b.Fatalf("plan.Run = %d", plan.Run)
		}
	}
}

// BenchmarkComponents measures key computation for one phase with 100
// remembered inputs.
func BenchmarkComponents(b *testing.B) {
	dir := b.TempDir()
	var inputs []string
	for i := 0; i < 100; i++ {
		name := fmt.Sprintf("in/f%03d.txt", i)
		os.MkdirAll(filepath.Join(dir, "in"), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644)
		inputs = append(inputs, fmt.Sprintf("%q", name))
	}
	src := fmt.Sprintf("phase \"p\" {\n command = \"true\"\n inputs = [%s]\n outputs = [\"o\"]\n}\n", strings.Join(inputs, ", "))
	os.WriteFile(filepath.Join(dir, "experiment.hcl"), []byte(src), 0o644)
	sp, diags := spec.NewParser().LoadFile(filepath.Join(dir, "experiment.hcl"), spec.Options{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	c, _ := cache.Open(filepath.Join(b.TempDir(), "cache"))
	e := New(sp, tiered(c), Config{})
	p := sp.Phase("p")
	for b.Loop() {
		comps, err := e.components(p, nil)
		if err != nil {
			b.Fatal(err)
		}
		_ = cache.ComputeKey(comps)
	}
}

// BenchmarkDirectoryKey measures the key of a phase whose input is a
// directory of 20,000 remembered files, as an edit run computes it.
func BenchmarkDirectoryKey(b *testing.B) {
	dir := b.TempDir()
	for d := 0; d < 20; d++ {
		os.MkdirAll(filepath.Join(dir, "in", fmt.Sprintf("d%02d", d)), 0o755)
		for i := 0; i < 1000; i++ {
			os.WriteFile(filepath.Join(dir, "in", fmt.Sprintf("d%02d/f%04d", d, i)), []byte{byte(i)}, 0o644)
		}
	}
	src := "phase \"p\" {\n command = \"true\"\n inputs = [\"in\"]\n outputs = [\"o\"]\n}\n"
	os.WriteFile(filepath.Join(dir, "experiment.hcl"), []byte(src), 0o644)
	sp, diags := spec.NewParser().LoadFile(filepath.Join(dir, "experiment.hcl"), spec.Options{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	c, _ := cache.Open(filepath.Join(b.TempDir(), "cache"))
	e := New(sp, tiered(c), Config{})
	p := sp.Phase("p")
	if _, err := e.components(p, nil); err != nil { // the memory learns the files
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		comps, err := e.components(p, nil)
		if err != nil {
			b.Fatal(err)
		}
		if k := cache.NewKeyed(comps); len(k.Chunks()) == 0 {
			b.Fatal("no chunks")
		}
	}
}
