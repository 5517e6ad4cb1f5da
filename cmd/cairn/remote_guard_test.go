package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// faultyCache is a Bazel HTTP cache server that misbehaves in one way.
type faultyCache struct {
	mode   string // "put500", "stall", "trickle"
	puts   atomic.Int64
	gets   atomic.Int64
	inBody chan struct{} // a stalled or trickling body has started (once)
	once   sync.Once
	done   chan struct{} // closed at the end of the test: handlers return
}

func (f *faultyCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPut:
		f.puts.Add(1)
		io.Copy(io.Discard, r.Body)
		if f.mode == "put500" {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
		return
	case http.MethodHead:
		http.NotFound(w, r)
		return
	}
	f.gets.Add(1)
	if f.mode == "put500" || !strings.Contains(r.URL.Path, "/ac/") {
		http.NotFound(w, r)
		return
	}
	// Claim an entry of 50 KB, then stall or send one byte a second.
	w.Header().Set("Content-Length", "50000")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	f.once.Do(func() { close(f.inBody) })
	for {
		if f.mode == "trickle" {
			w.Write([]byte{'x'})
			w.(http.Flusher).Flush()
		}
		select {
		case <-f.done:
			return
		case <-r.Context().Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func newFaultyCache(t *testing.T, mode string) (*faultyCache, string) {
	f := &faultyCache{mode: mode, inBody: make(chan struct{}), done: make(chan struct{})}
	srv := httptest.NewServer(f)
	t.Cleanup(func() { close(f.done); srv.Close() })
	return f, srv.URL
}

// trivialWorkspace writes an experiment of n phases that each echo a line.
func trivialWorkspace(t *testing.T, n int) string {
	dir := t.TempDir()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "phase \"p%d\" {\n  command = \"echo %d > p%d.txt\"\n  outputs = [\"p%d.txt\"]\n}\n", i, i, i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "experiment.hcl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runBounded runs cairn in dir with env added, killing it after limit.
func runBounded(t *testing.T, bin, dir string, limit time.Duration, env []string, args ...string) (stdout, stderr string, took time.Duration, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"NO_COLOR=1", "CAIRN_CACHE_DIR=" + filepath.Join(dir, ".cache-test")}, env...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err = cmd.Run()
	took = time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("cairn %v still running after %v (killed)\nstdout:\n%s\nstderr:\n%s", args, limit, o.String(), e.String())
	}
	return o.String(), e.String(), took, err
}

// TestRemoteSwitchedOffAfterFailures: a server answering 500 to every
// upload costs a few requests and one warning, not retries in every phase.
func TestRemoteSwitchedOffAfterFailures(t *testing.T) {
	bin := buildCairn(t)
	f, url := newFaultyCache(t, "put500")
	dir := trivialWorkspace(t, 24)
	out, errOut, _, err := runBounded(t, bin, dir, 60*time.Second, []string{"CAIRN_REMOTE_CACHE=" + url}, "run")
	if err != nil {
		t.Fatalf("cairn run: %v\n%s%s", err, out, errOut)
	}
	if ran, _, _ := ranCounts(t, []byte(out)); ran != 24 {
		t.Fatalf("ran %d phases, want 24\n%s", ran, out)
	}
	// Three failed uploads in a row switch the remote off, and uploads
	// still in flight end with it: the attempts do not grow with the
	// number of phases (each upload is tried 4 times, a few in parallel).
	if n := f.puts.Load(); n > 16 {
		t.Errorf("%d PUTs to a server answering 500 to every upload, want at most 16 (not 4 per phase)", n)
	}
	if n := strings.Count(errOut, "switched off"); n != 1 {
		t.Errorf("%d switch-off warnings, want 1:\n%s", n, errOut)
	}
}

// TestRemoteStalledAndTrickling: a server that sends headers and then
// stalls, or trickles a byte a second, costs bounded time and one warning.
func TestRemoteStalledAndTrickling(t *testing.T) {
	bin := buildCairn(t)
	for _, mode := range []string{"stall", "trickle"} {
		t.Run(mode, func(t *testing.T) {
			f, url := newFaultyCache(t, mode)
			dir := trivialWorkspace(t, 4)
			out, errOut, took, err := runBounded(t, bin, dir, 30*time.Second,
				[]string{"CAIRN_REMOTE_CACHE=" + url, "CAIRN_REMOTE_TIMEOUT=1s", "CAIRN_REMOTE_MIN_RATE=1000000"}, "run")
			if err != nil {
				t.Fatalf("cairn run: %v\n%s%s", err, out, errOut)
			}
			if ran, _, _ := ranCounts(t, []byte(out)); ran != 4 {
				t.Fatalf("ran %d phases, want 4\n%s", ran, out)
			}
			if took > 10*time.Second {
				t.Errorf("run took %v with a %s server, want a few seconds", took, mode)
			}
			if n := strings.Count(errOut, "switched off"); n != 1 {
				t.Errorf("%d switch-off warnings, want 1:\n%s", n, errOut)
			}
			if n := f.gets.Load(); n > 4 {
				t.Errorf("%d GETs for 4 phases: lookups went on after the remote stalled", n)
			}
		})
	}
}

// TestRemoteInterruptEndsTransfer: Ctrl-C during a trickling download
// ends cairn at once, though the remote's own deadline is far away.
func TestRemoteInterruptEndsTransfer(t *testing.T) {
	bin := buildCairn(t)
	f, url := newFaultyCache(t, "trickle")
	dir := trivialWorkspace(t, 1)
	cmd := exec.Command(bin, "run")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "CAIRN_CACHE_DIR="+filepath.Join(dir, ".cache-test"),
		"CAIRN_REMOTE_CACHE="+url, "CAIRN_REMOTE_TIMEOUT=300s")
	var o bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &o
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-f.inBody:
	case err := <-exited:
		t.Fatalf("cairn ended before the download started: %v\n%s", err, o.String())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("no download started\n%s", o.String())
	}
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
		if d := time.Since(sent); d > 5*time.Second {
			t.Errorf("cairn took %v to end after SIGINT", d)
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("cairn still running 20 s after SIGINT during a download\n%s", o.String())
	}
}
