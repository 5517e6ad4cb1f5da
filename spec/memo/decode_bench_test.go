package memo

import (
	"github.com/cairn-run/cairn/spec"

	"os"
	"path/filepath"
	"testing"
)

// BenchmarkMemoDecode1000 decodes the memo of a spec of 1,000 phases
// (from bytes in memory: no file read, no dependency checked), the part
// of a no-op's start the memo's codec decides.
func BenchmarkMemoDecode1000(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "experiment.hcl")
	if err := os.WriteFile(path, layeredSpec(1000), 0o644); err != nil {
		b.Fatal(err)
	}
	memo := filepath.Join(dir, "spec.memo")
	LoadFile(spec.NewParser(), path, spec.Options{}, memo, nil)
	data, err := os.ReadFile(memo)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeMemo(append([]byte(nil), data...)); err != nil {
			b.Fatal(err)
		}
	}
}
