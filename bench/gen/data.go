package main

// The data workloads (-data): cairn alone on data at scale, one phase
// each, beside what the filesystem allows (git status, find, sha256sum,
// cp; see bench/harness).
//
//	files    N small files under in/ (in/dNNNN/fNNNNNNN, 1,000 a directory),
//	         one phase whose input is the directory in/
//	outs     one phase writing N files of S bytes (split of in/blob) into
//	         the directory output out/d
//	outlist  the same phase, its N files declared one by one
//	big      N files of S bytes in/gK; phase hash reads them all, phase
//	         copy writes out/g0, a copy of in/g0
//
// Every input is pseudo-random (ChaCha8, seeded by the file's index):
// incompressible and the same on every run, written by a Go loop on
// every CPU so that a million files or 16 GiB take seconds, not the
// minutes of a shell loop.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

// filesPerDir is how many files of the files workload share a directory.
const filesPerDir = 1000

// dataFile is the path of the i-th file of the files workload.
func dataFile(i int) string {
	return fmt.Sprintf("in/d%04d/f%07d", i/filesPerDir, i)
}

// splitCommand is the phase of the outs workloads: n files of s bytes,
// out/d/f000000 on, cut from in/blob by split (one process, so the
// command's own cost stays small beside the tool's).
func splitCommand(s int64) string {
	return fmt.Sprintf("mkdir -p out/d && exec split -b %d -d -a 6 in/blob out/d/f", s)
}

func writeData(kind string, n int, s int64, dir string, inputs bool) error {
	if n < 1 || s < 1 {
		return fmt.Errorf("-data needs -count >= 1 and -s >= 1 (count=%d s=%d)", n, s)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "experiment %q {}\n", kind)
	switch kind {
	case "files":
		fmt.Fprintf(&b, "\nphase \"scan\" {\n  command = \"echo %d > out/n\"\n  inputs  = [\"in\"]\n  outputs = { n = \"out/n\" }\n}\n", n)
		if inputs {
			if err := writeRandomFiles(dir, n, s, dataFile); err != nil {
				return err
			}
		}
		// git status measures the same tree; what cairn writes is not part of it.
		if err := writeFile(dir, ".gitignore", []byte("/out/\n/.cairn/\n")); err != nil {
			return err
		}
	case "outs", "outlist":
		fmt.Fprintf(&b, "\nphase \"write\" {\n  command = %q\n  inputs  = [\"in/blob\"]\n", splitCommand(s))
		if kind == "outs" {
			b.WriteString("  outputs = { d = \"out/d\" }\n}\n")
		} else {
			b.WriteString("  outputs = [\n")
			for i := range n {
				fmt.Fprintf(&b, "    \"out/d/f%06d\",\n", i)
			}
			b.WriteString("  ]\n}\n")
		}
		if n > 1_000_000 {
			return fmt.Errorf("-data %s: at most 1,000,000 outputs (split -a 6)", kind)
		}
		if inputs {
			if err := writeRandomFiles(dir, 1, int64(n)*s, func(int) string { return "in/blob" }); err != nil {
				return err
			}
		}
	case "big":
		var all []string
		for i := range n {
			all = append(all, fmt.Sprintf("in/g%d", i))
		}
		fmt.Fprintf(&b, "\nphase \"hash\" {\n  command = \"echo %d > out/h\"\n  inputs  = [%s]\n  outputs = { h = \"out/h\" }\n}\n", n, quoteList(all))
		b.WriteString("\nphase \"copy\" {\n  command = \"cp in/g0 out/g0\"\n  inputs  = [\"in/g0\"]\n  outputs = { g = \"out/g0\" }\n}\n")
		if inputs {
			if err := writeRandomFiles(dir, n, s, func(i int) string { return all[i] }); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown -data %q (files, outs, outlist or big)", kind)
	}
	return writeFile(dir, "experiment.hcl", b.Bytes())
}

// writeRandomFiles writes n files of s pseudo-random bytes, file i at
// dir/name(i), on every CPU. A file already there at size s is kept.
func writeRandomFiles(dir string, n int, s int64, name func(int) string) error {
	workers := min(runtime.NumCPU(), n)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, min(s, 1<<20))
			made := ""
			for i := w; i < n; i += workers {
				p := filepath.Join(dir, name(i))
				if st, err := os.Stat(p); err == nil && st.Size() == s {
					continue
				}
				if d := filepath.Dir(p); d != made {
					if err := os.MkdirAll(d, 0o755); err != nil {
						errs <- err
						return
					}
					made = d
				}
				if err := writeRandom(p, s, i, buf); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func writeRandom(p string, s int64, seed int, buf []byte) error {
	rng := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24), 'd', 'a', 't', 'a'})
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	for left := s; left > 0; {
		b := buf[:min(left, int64(len(buf)))]
		_, _ = rng.Read(b)
		if _, err := f.Write(b); err != nil {
			f.Close()
			return err
		}
		left -= int64(len(b))
	}
	return f.Close()
}
