package main

import (
	"crypto/sha256"
	"io"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// memoRSSLimitKB bounds the peak resident size of a cairn memo process
// whatever the size of the command's stdout and stdin: they are streamed,
// never held whole.
const memoRSSLimitKB = 100 << 10

// TestMemoStreamsLargeOutputAndStdin: cairn memo of a command printing
// 200 MB, fed 150 MB on stdin, stays under memoRSSLimitKB both when it
// runs the command and when it replays the recorded output, and the
// replay is byte for byte what the command printed.
func TestMemoStreamsLargeOutputAndStdin(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 700 MB through pipes")
	}
	const outBytes, inBytes = 200 << 20, 150 << 20
	w := newRelWS(t, "")
	// The command prints inBytes of its stdin back, then pads it to
	// outBytes with zeros: its output depends on its stdin.
	script := "cat; head -c " + strconv.Itoa(outBytes-inBytes) + " /dev/zero; echo >>ran.log"
	run := func(what string) ([32]byte, int64) {
		t.Helper()
		cmd := exec.Command("cairn", "memo", "--", "sh", "-c", script)
		cmd.Dir = w.dir
		cmd.Env = append(cmd.Environ(), "CAIRN_CACHE_DIR="+w.cache)
		cmd.Stdin = io.LimitReader(&patternReader{}, inBytes)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, out)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s: cairn memo: %v", what, err)
		}
		if n != outBytes {
			t.Fatalf("%s: %d bytes of stdout, want %d", what, n, outBytes)
		}
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB on Linux
		t.Logf("FIGURE memo %s: peak RSS %d MiB for %d MiB out, %d MiB in", what, rss>>10, outBytes>>20, inBytes>>20)
		if rss > memoRSSLimitKB {
			t.Errorf("%s: cairn memo peak RSS %d MiB, want under %d MiB", what, rss>>10, memoRSSLimitKB>>10)
		}
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		return sum, rss
	}
	first, _ := run("first run")
	replay, _ := run("replay")
	if first != replay {
		t.Errorf("replayed stdout hashes to %x, the command printed %x", replay, first)
	}
	if ran := w.read("ran.log"); ran != "\n" {
		t.Errorf("the command ran %d times, want once (the second call replays)", len(ran))
	}
}

// patternReader yields a repeating, not very compressible byte pattern,
// the same whatever the reads' sizes.
type patternReader struct{ n int }

func (r *patternReader) Read(p []byte) (int, error) {
	for i := range p {
		k := r.n + i
		p[i] = byte(k*7919 + k>>9)
	}
	r.n += len(p)
	return len(p), nil
}
