package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

const dirInputSpec = `
phase "a" {
  command = "write out.txt done"
  inputs  = ["data"]
  outputs = ["out.txt"]
}
`

// dirTree returns the files of a directory input of n files, some of
// them five levels deep.
func dirTree(n int) (map[string]string, []string) {
	files := map[string]string{"experiment.hcl": dirInputSpec}
	var names []string
	for i := range n {
		name := fmt.Sprintf("data/d%d/e%d/f%d.txt", i%7, i%3, i)
		if i%10 == 0 {
			name = fmt.Sprintf("data/d%d/e/f/g/h/f%d.txt", i%7, i)
		}
		files[name] = fmt.Sprintf("file %d\n", i)
		names = append(names, name)
	}
	return files, names
}

// TestDirectoryEditHashesOnlyIt: after one file deep in a directory input
// is edited, the run reads that file alone to hash it, and the run after
// reads no input at all.
func TestDirectoryEditHashesOnlyIt(t *testing.T) {
	files, names := dirTree(300)
	s := newSetup(t, files)
	calmFiles(t, s.dir, names...)
	if res := s.run(t, RunOptions{}); res.HashedFiles != 300 {
		t.Fatalf("first run hashed %d files, want 300", res.HashedFiles)
	}
	deep := "data/d0/e/f/g/h/f70.txt"
	edited := "an edit of another size\n"
	must(t, os.WriteFile(filepath.Join(s.dir, deep), []byte(edited), 0o644))
	calmFiles(t, s.dir, deep)
	res := s.run(t, RunOptions{})
	if s.exec.count("a") != 2 {
		t.Fatalf("phase a ran %d times after an edit, want 2", s.exec.count("a"))
	}
	if res.HashedFiles != 1 || res.HashedBytes != int64(len(edited)) {
		t.Errorf("run after the edit hashed %d files, %d bytes; want 1 file, %d bytes", res.HashedFiles, res.HashedBytes, len(edited))
	}
	res = s.run(t, RunOptions{})
	if s.exec.count("a") != 2 {
		t.Errorf("phase a ran again on a no-op")
	}
	// The output, written within the racy window of its hashing, may be
	// read once more; no input is.
	if res.HashedFiles > 1 || res.HashedBytes > int64(len("done\n")) {
		t.Errorf("no-op after the edit hashed %d files, %d bytes; want no input", res.HashedFiles, res.HashedBytes)
	}
}

// TestDirectoryMemoriesAreHints: with the digest and phase-key memories
// damaged, an edit deep in a directory input (same size, mtime put back)
// still reruns the phase; with them deleted, an unchanged tree is still
// cached, at the cost of hashing every file again.
func TestDirectoryMemoriesAreHints(t *testing.T) {
	files, names := dirTree(200)
	s := newSetup(t, files)
	calmFiles(t, s.dir, names...)
	s.run(t, RunOptions{})
	state := filepath.Join(s.dir, ".cairn")
	for _, m := range []string{"digests", "phasekeys"} {
		must(t, os.WriteFile(filepath.Join(state, m), []byte("damaged\x00\x01"), 0o644))
	}
	deep := filepath.Join(s.dir, "data/d3/e/f/g/h/f10.txt")
	fi, err := os.Stat(deep)
	must(t, err)
	must(t, os.WriteFile(deep, []byte("FILE 10\n"), 0o644))
	must(t, os.Chtimes(deep, fi.ModTime(), fi.ModTime()))
	s.run(t, RunOptions{})
	if s.exec.count("a") != 2 {
		t.Fatalf("phase a ran %d times after a same-size edit with damaged memories, want 2", s.exec.count("a"))
	}
	for _, m := range []string{"digests", "phasekeys"} {
		must(t, os.Remove(filepath.Join(state, m)))
	}
	res := s.run(t, RunOptions{})
	if s.exec.count("a") != 2 {
		t.Errorf("phase a ran again with its memories deleted and nothing changed")
	}
	if res.HashedFiles < 200 {
		t.Errorf("with the digest memory deleted, %d files were hashed; want every input (200)", res.HashedFiles)
	}
}

// BenchmarkDirectoryInput plans a phase whose input is a directory of
// 5,000 files: a no-op (its key from the phase-key memory) and a full
// computation (every file looked up in the digest memory), with the
// allocations per file.
func BenchmarkDirectoryInput(b *testing.B) {
	const n = 5000
	files, _ := dirTree(n)
	s := newSetup(b, files)
	calmAll(b, s.dir)
	if _, err := s.engine(b).Run(b.Context(), RunOptions{}); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"noop", "full"} {
		b.Run(mode, func(b *testing.B) {
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for b.Loop() {
				e := s.engine(b)
				if mode == "full" {
					e.phaseKeys = nil
				}
				if _, err := e.Plan(PlanOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&m1)
			ops := float64(b.N)
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/ops/n, "allocs/file")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/ops/n, "B/file")
		})
	}
}

// BenchmarkInputsRecheck checks again, as after a phase's command, the
// inputs of a phase whose input is a directory of 5,000 unchanged files.
func BenchmarkInputsRecheck(b *testing.B) {
	const n = 5000
	files, _ := dirTree(n)
	s := newSetup(b, files)
	calmAll(b, s.dir)
	e := s.engine(b)
	p := e.spec.Phase("a")
	d, err := e.decide(p, nil, false)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if changed := e.inputsChanged(p, d, nil); changed != nil {
			b.Fatal(changed)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/file")
}

// calmAll sets every file's mtime below dir an hour back and waits until
// their ctimes lie outside the racy window.
func calmAll(b *testing.B, dir string) {
	var names []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, rel)
		}
		return nil
	})
	calmFiles(b, dir, names...)
}
