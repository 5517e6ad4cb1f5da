package cache

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const benchSize = 1 << 30

// writeRandomFixture writes n incompressible bytes to a new file.
func writeRandomFixture(b *testing.B, n int64) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "random.bin")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.NewChaCha8([32]byte{1})
	buf := make([]byte, 1<<20)
	for done := int64(0); done < n; done += int64(len(buf)) {
		r.Read(buf)
		if _, err := f.Write(buf[:min(int64(len(buf)), n-done)]); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return p
}

// writeTextFixture writes n bytes of CSV-like text (random digits in a
// fixed shape), which zstd shrinks about 2x, like real tabular outputs.
func writeTextFixture(b *testing.B, n int64) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "text.csv")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	labels := []string{"cat", "dog", "bird", "fish"}
	line := make([]byte, 0, 64)
	for written := int64(0); written < n; {
		line = line[:0]
		v := r.Uint64()
		for i := 0; i < 3; i++ { // three fields like 0.48213
			line = append(line, '0', '.')
			for j := 0; j < 5; j++ {
				line = append(line, byte('0'+v%10))
				v /= 10
			}
			line = append(line, ',')
		}
		line = append(line, labels[v%4]...)
		line = append(line, '\n')
		m := min(int64(len(line)), n-written)
		w.Write(line[:m])
		written += m
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return p
}

func BenchmarkHashFile1GiB(b *testing.B) {
	p := writeRandomFixture(b, benchSize)
	b.SetBytes(benchSize)
	b.ResetTimer()
	for range b.N {
		if _, _, err := HashFile(p); err != nil {
			b.Fatal(err)
		}
	}
}

func benchPutFile(b *testing.B, p string) {
	b.SetBytes(benchSize)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		c := newDir(b)
		b.StartTimer()
		d, _, err := c.PutFile(p)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if sp, ok := c.statBlob(d); ok {
			st, _ := os.Stat(sp)
			b.ReportMetric(float64(st.Size())/benchSize, "stored/size")
		}
		os.RemoveAll(c.Root())
		b.StartTimer()
	}
}

func BenchmarkPutFile1GiB(b *testing.B) { benchPutFile(b, writeRandomFixture(b, benchSize)) }

func BenchmarkPutFile1GiBText(b *testing.B) { benchPutFile(b, writeTextFixture(b, benchSize)) }

// benchRestoreFile restores the n-byte file p from the cache, over and
// over, into the same destination (each restore replaces the last).
func benchRestoreFile(b *testing.B, p string, n int64) {
	c := newDir(b)
	d, _, err := c.PutFile(p)
	if err != nil {
		b.Fatal(err)
	}
	dst := filepath.Join(b.TempDir(), "restored")
	b.SetBytes(n)
	b.ResetTimer()
	for range b.N {
		if err := c.RestoreFile(d, dst, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRestoreFile1GiB(b *testing.B) {
	benchRestoreFile(b, writeRandomFixture(b, benchSize), benchSize)
}

func BenchmarkRestoreFile1GiBText(b *testing.B) {
	benchRestoreFile(b, writeTextFixture(b, benchSize), benchSize)
}

// restoreBigSize is a large output stored raw (incompressible): the
// kernel-copy path of RestoreFile.
const restoreBigSize = 256 << 20

func BenchmarkRestoreFile256MiBRaw(b *testing.B) {
	if testing.Short() {
		b.Skip("writes a 256 MiB fixture")
	}
	benchRestoreFile(b, writeRandomFixture(b, restoreBigSize), restoreBigSize)
}

// BenchmarkRestoreFile256MiBRawUser is the same restore with the kernel
// copies unavailable: the user-space copy (read, hash, write) every
// restore used before.
func BenchmarkRestoreFile256MiBRawUser(b *testing.B) {
	if testing.Short() {
		b.Skip("writes a 256 MiB fixture")
	}
	withoutKernelCopy(b)
	benchRestoreFile(b, writeRandomFixture(b, restoreBigSize), restoreBigSize)
}

// BenchmarkRestoreFile256MiBZst restores text stored compressed: streamed
// through the decoder.
func BenchmarkRestoreFile256MiBZst(b *testing.B) {
	if testing.Short() {
		b.Skip("writes a 256 MiB fixture")
	}
	benchRestoreFile(b, writeTextFixture(b, restoreBigSize), restoreBigSize)
}

func BenchmarkComputeKey(b *testing.B) {
	comps := sampleComponents(100)
	b.SetBytes(int64(len(EncodeComponents(comps))))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		ComputeKey(comps)
	}
}

// BenchmarkNewKeyed measures the key and chunks of a phase of 200,000
// input files, as a run after an edit computes them.
func BenchmarkNewKeyed(b *testing.B) {
	comps := make([]Component, 0, 200001)
	comps = append(comps, Component{Kind: "command", Value: `["scan"]`})
	value := "-:" + strings.Repeat("ab", 32)
	for i := range 200000 {
		comps = append(comps, Component{Kind: ChunkKind, Name: fmt.Sprintf("in/d%03d/f%07d", i/1000, i), Value: value})
	}
	comps = sortedComponents(comps)
	b.SetBytes(int64(len(EncodeComponents(comps))))
	b.ReportAllocs()
	for b.Loop() {
		if k := NewKeyed(comps); len(k.Chunks()) < 2 {
			b.Fatal("not chunked")
		}
	}
}
