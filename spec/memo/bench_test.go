package memo

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-run/cairn/spec"
)

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
		memo := Path(filepath.Join(dir, ".cairn"), path)
		b.Run(fmt.Sprintf("parse/%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, diags := spec.NewParser().LoadFile(path, spec.Options{}); diags.HasErrors() {
					b.Fatal(diags.Error())
				}
			}
		})
		if _, _, hit := LoadFile(spec.NewParser(), path, spec.Options{}, memo, nil); hit {
			b.Fatal("memo hit before it was written")
		}
		b.Run(fmt.Sprintf("memo/%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, _, hit := LoadFile(spec.NewParser(), path, spec.Options{}, memo, nil); !hit {
					b.Fatal("memo miss")
				}
			}
		})
	}
}
