package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// sweepSpec is a phase with a for_each over n keys (two nested ranges:
// range() stops at 1,024 values).
func sweepSpec(n int) []byte {
	return fmt.Appendf(nil, `phase "cell" {
  for_each = toset(flatten([
    for a in range(%d) : [for b in range(1000) : format("%%06d", a * 1000 + b) if a * 1000 + b < %d]
  ]))
  command = "echo ${each.key} > out/cell-${each.key}"
  params  = { seed = each.key }
  outputs = { o = "out/cell-${each.key}" }
}
`, (n+999)/1000, n)
}

// BenchmarkLoadForEach loads a for_each sweep of growing size; ns/op per
// instance should stay flat (no quadratic work in loading).
func BenchmarkLoadForEach(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		src := sweepSpec(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				sp, diags := NewParser().LoadBytes("experiment.hcl", src, b.TempDir(), Options{})
				if diags.HasErrors() {
					b.Fatal(diags.Error())
				}
				if len(sp.Phases) != n {
					b.Fatalf("%d phases, want %d", len(sp.Phases), n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/instance")
		})
	}
}

// layeredSpec is bench/gen's workload in miniature: n phases, each with
// ten literal inputs and a literal command, the shape of a hand-written
// or generated pipeline (no for_each).
func layeredSpec(n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		b = fmt.Appendf(b, "phase \"p%05d\" {\n  command = \"cat", i)
		for j := 0; j < 10; j++ {
			b = fmt.Appendf(b, " in/f%05d", i+j*n)
		}
		b = fmt.Appendf(b, " | sha256sum > out/p%05d\"\n  inputs  = [", i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b = append(b, ", "...)
			}
			b = fmt.Appendf(b, "\"in/f%05d\"", i+j*n)
		}
		b = fmt.Appendf(b, "]\n  outputs = { o = \"out/p%05d\" }\n}\n\n", i)
	}
	return b
}

// BenchmarkSpecMemo compares parsing and evaluating a spec with loading
// its memo (a no-op's path), for 100 and 1,000 phases.
func BenchmarkSpecMemo(b *testing.B) {
	for _, n := range []int{100, 1000} {
		dir := b.TempDir()
		path := filepath.Join(dir, "experiment.hcl")
		if err := os.WriteFile(path, layeredSpec(n), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dir, ".cairn"), 0o755); err != nil {
			b.Fatal(err)
		}
		memo := MemoPath(filepath.Join(dir, ".cairn"), path)
		b.Run(fmt.Sprintf("parse/%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, diags := NewParser().LoadFile(path, Options{}); diags.HasErrors() {
					b.Fatal(diags.Error())
				}
			}
		})
		if _, _, hit := NewParser().LoadFileMemo(path, Options{}, memo); hit {
			b.Fatal("memo hit before it was written")
		}
		b.Run(fmt.Sprintf("memo/%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, _, hit := NewParser().LoadFileMemo(path, Options{}, memo); !hit {
					b.Fatal("memo miss")
				}
			}
		})
	}
}
