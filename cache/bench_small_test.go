package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkPutFileSmall stores a new 68-byte file per iteration (a
// phase's output in the bench workload): open, hash, temp file, fsync,
// link, directory fsync; the cost per phase of storing an output.
func BenchmarkPutFileSmall(b *testing.B) {
	c := newDir(b)
	dir := b.TempDir()
	paths := make([]string, b.N)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("out%d", i))
		if err := os.WriteFile(paths[i], []byte(fmt.Sprintf("%064x  -\n%d", i, i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := c.PutFile(paths[i]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHashFileSmall hashes a 4 KiB file (an input of the bench
// workload): the cost per input of deciding a phase.
func BenchmarkHashFileSmall(b *testing.B) {
	p := filepath.Join(b.TempDir(), "in")
	if err := os.WriteFile(p, randomBytes(b, 4096), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(4096)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := HashFile(p); err != nil {
			b.Fatal(err)
		}
	}
}
