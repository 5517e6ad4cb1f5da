// Command gosha prints the SHA-256 of every file given, hashing -j files
// at a time: the bench harness's measure of how fast Go's crypto/sha256
// can hash large inputs on this machine, the limit cairn's hashing of
// large files is held to (see bench/README.md).
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
)

func main() {
	jobs := flag.Int("j", 2, "files hashed at once")
	flag.Parse()
	files := flag.Args()
	sums := make([]string, len(files))
	errs := make([]error, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(*jobs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			for i := range next {
				sums[i], errs[i] = sum(files[i], buf)
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	status := 0
	for i, f := range files {
		if errs[i] != nil {
			fmt.Fprintln(os.Stderr, "gosha:", errs[i])
			status = 1
			continue
		}
		fmt.Printf("%s  %s\n", sums[i], f)
	}
	os.Exit(status)
}

// sum streams the file through SHA-256 in buf-sized reads: flat memory,
// as cairn must hash a file of many gigabytes.
func sum(name string, buf []byte) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{f}, buf); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}
