package memories

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/workspace"
)

// benchMemory saves a digest memory of n files laid out as a directory
// input of n files in 200 directories, and returns its path, the paths
// (sorted) and their stats.
func benchMemory(b *testing.B, n int) (string, []string, []workspace.FileStat) {
	b.Helper()
	paths := make([]string, n)
	stats := make([]workspace.FileStat, n)
	m := &Memory{path: filepath.Join(b.TempDir(), "digests"), now: time.Now, entries: map[string]*dirRecs{}, dirty: true}
	old := time.Now().Add(-time.Hour).UnixNano()
	for i := range n {
		paths[i] = fmt.Sprintf("in/d%04d/f%07d", i*200/n, i)
		stats[i] = workspace.FileStat{Size: 1024, MTime: old + int64(i), CTime: old + int64(i), Ino: uint64(1000 + i), Mode: 0o644}
		st := stats[i]
		m.record(paths[i], memEntry{digest: cache.HashBytes([]byte(paths[i])), size: st.Size, mtime: st.MTime, ctime: st.CTime, ino: st.Ino, mode: uint32(st.Mode), recorded: old + int64(time.Minute)})
	}
	if err := m.Save(); err != nil {
		b.Fatal(err)
	}
	return m.path, paths, stats
}

// BenchmarkDigestsLookup200k: a no-op's lookups, every file of a
// directory input of 200,000 in path order, against a loaded memory.
func BenchmarkDigestsLookup200k(b *testing.B) {
	p, paths, stats := benchMemory(b, 200000)
	m := LoadMemory(p)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c := m.Cursor()
		for i, path := range paths {
			if _, ok := c.Lookup(path, stats[i]); !ok {
				b.Fatalf("%s not found", path)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(paths)), "ns/file")
}

// BenchmarkDigestsSave200kOneChanged: the save after an edit run, one
// entry recorded over a loaded memory of 200,000.
func BenchmarkDigestsSave200kOneChanged(b *testing.B) { benchSaveOneChanged(b, 200000) }

// BenchmarkDigestsLookup200kUnordered: the same lookups without a cursor
// (each a binary search), as a file looked up alone costs.
func BenchmarkDigestsLookup200kUnordered(b *testing.B) {
	p, paths, stats := benchMemory(b, 200000)
	m := LoadMemory(p)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for i, path := range paths {
			if _, ok := m.Lookup(path, stats[i]); !ok {
				b.Fatalf("%s not found", path)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(paths)), "ns/file")
}

// BenchmarkDigestsSave200kCold: the save after a first run, 200,000
// entries recorded by this process, no memory loaded.
func BenchmarkDigestsSave200kCold(b *testing.B) {
	_, paths, stats := benchMemory(b, 200000)
	p := filepath.Join(b.TempDir(), "cold")
	m := LoadMemory(p)
	at := time.Now()
	for i, path := range paths {
		m.Record(path, stats[i], cache.HashBytes([]byte(path)), at)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		m.dirty = true
		if err := m.Save(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(paths)), "ns/file")
}

// BenchmarkDigestsRecord200k: a first run's recording of 200,000 files
// hashed by two workers, a directory at a time each, then its save.
func BenchmarkDigestsRecord200k(b *testing.B) {
	_, paths, stats := benchMemory(b, 200000)
	dir := b.TempDir()
	at := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		m := LoadMemory(filepath.Join(dir, "digests"))
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i, path := range paths {
					if i/1000%2 == w {
						m.Record(path, stats[i], cache.HashBytes([]byte(path)), at)
					}
				}
			}()
		}
		wg.Wait()
		if err := m.Save(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(paths)), "ns/file")
}

// BenchmarkDigestsSave1MOneChanged: the save after an edit run over a
// directory input of 1,000,000 files, one of them edited: one record over
// a loaded memory of 1,000,000. bytes/op is what the save wrote (files of
// the memory's directory replaced, by their new size).
func BenchmarkDigestsSave1MOneChanged(b *testing.B) { benchSaveOneChanged(b, 1000000) }

// benchSaveOneChanged records one edited file's digest over a loaded
// memory of n and saves it, reporting the bytes written.
func benchSaveOneChanged(b *testing.B, n int) {
	p, paths, stats := benchMemory(b, n)
	m := LoadMemory(p)
	st := stats[len(stats)/2]
	st.MTime += 1e9
	seen := fileInodes(b, filepath.Dir(p))
	written := int64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m.Record(paths[len(paths)/2], st, cache.HashBytes([]byte{byte(i)}), time.Now())
		if err := m.Save(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		now := fileInodes(b, filepath.Dir(p))
		for name, f := range now {
			if seen[name] != f {
				written += f.size
			}
		}
		seen = now
		b.StartTimer()
	}
	b.ReportMetric(float64(written)/float64(b.N), "bytes/op")
}

type fileID struct {
	ino  uint64
	size int64
}

// fileInodes returns the inode and size of each file in dir: a file
// replaced by an atomic write has a new inode.
func fileInodes(b *testing.B, dir string) map[string]fileID {
	b.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]fileID{}
	for _, e := range ents {
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		out[e.Name()] = fileID{workspace.StatOf(fi).Ino, fi.Size()}
	}
	return out
}

// BenchmarkDigestsLookup200kRecent: BenchmarkDigestsLookup200k with
// 4,096 of the files edited since the base was written, their records in
// the recent file.
func BenchmarkDigestsLookup200kRecent(b *testing.B) {
	p, paths, stats := benchMemory(b, 200000)
	m := LoadMemory(p)
	step := len(paths) / recentLimit(len(paths))
	for i := 0; i < len(paths); i += step {
		stats[i].MTime++
		m.Record(paths[i], stats[i], cache.HashBytes([]byte(paths[i])), time.Now())
	}
	if err := m.Save(); err != nil {
		b.Fatal(err)
	}
	if m = LoadMemory(p); len(m.recent.recs) != recentLimit(len(paths)) {
		b.Fatalf("%d records in the recent file, want %d", len(m.recent.recs), recentLimit(len(paths)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c := m.Cursor()
		for i, path := range paths {
			if _, ok := c.Lookup(path, stats[i]); !ok {
				b.Fatalf("%s not found", path)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(paths)), "ns/file")
}
