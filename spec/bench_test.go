package spec

import (
	"fmt"
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
