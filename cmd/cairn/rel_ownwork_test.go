package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/internal/failpoint"
	"github.com/cairn-run/cairn/runrec"
)

// ownWorkDeadline is how soon after the first Ctrl-C cairn must have
// exited while it was busy with its own work (hashing, restoring,
// downloading): that work stops at once, so this only covers a loaded
// machine's scheduling.
const ownWorkDeadline = 3 * time.Second

// interruptOwnWork starts cairn ARGS in w with env added, waits until the
// failpoint trace shows label (cairn is in that step), sends one SIGINT to
// its process group, as a terminal's Ctrl-C does, and returns the exit
// code and output. It fails the test if cairn is not gone within
// ownWorkDeadline, and then kills it.
func interruptOwnWork(t *testing.T, w *relWS, label string, env []string, args ...string) (int, string) {
	t.Helper()
	trace := w.path("fp.trace")
	var out bytes.Buffer
	cmd := w.cmd(&out, args...)
	cmd.Env = append(append(cmd.Env, failpoint.TraceEnvVar+"="+trace), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(trace)
		if bytes.Contains(b, []byte(label+"\n")) {
			break
		}
		select {
		case err := <-waited:
			t.Fatalf("cairn ended before %s: %v\n%s", label, err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("cairn never reached %s\n%s", label, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	select {
	case err := <-waited:
		t.Logf("exited %v after the Ctrl-C", time.Since(began).Round(time.Millisecond))
		return exitCode(err), out.String()
	case <-time.After(ownWorkDeadline):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		t.Fatalf("cairn still ran %v after a Ctrl-C during %s (SIGKILLed)\n%s", ownWorkDeadline, label, out.String())
		return 0, ""
	}
}

// checkStoppedRun checks what a user relies on after a Ctrl-C: exit 130,
// the closing line, and a saved run record that says stopped (interrupt).
func checkStoppedRun(t *testing.T, w *relWS, code int, out string) relState {
	t.Helper()
	if code != exitStopped {
		t.Errorf("exit code %d, want %d\n%s", code, exitStopped, out)
	}
	if !strings.Contains(out, "stopped (interrupt)") {
		t.Errorf("no closing line saying the run stopped:\n%s", out)
	}
	st := w.latest()
	if st.Status != runrec.RunStopped || st.StopReason != engine.StopInterrupt {
		t.Errorf("run record: status %q, stop_reason %q; want %q, %q", st.Status, st.StopReason, runrec.RunStopped, engine.StopInterrupt)
	}
	return st
}

// TestCtrlCWhileHashing: a Ctrl-C while cairn hashes a huge input (a
// sparse file of 8 GiB, tens of seconds of hashing) ends the run at once:
// the phase is not started, the run is recorded stopped.
func TestCtrlCWhileHashing(t *testing.T) {
	w := newRelWS(t, `
phase "p" {
  inputs  = ["big"]
  command = "echo ran > out.txt"
  outputs = ["out.txt"]
}
`)
	if err := exec.Command("truncate", "-s", "8G", w.path("big")).Run(); err != nil {
		t.Fatal(err)
	}
	code, out := interruptOwnWork(t, w, "hash.window", nil, "run")
	st := checkStoppedRun(t, w, code, out)
	if p := st.Phases["p"]; p.Status != runrec.StatusSkipped || !strings.Contains(p.Error, "not started") {
		t.Errorf("phase p: %s (%s), want skipped, not started", p.Status, p.Error)
	}
	if w.read("out.txt") != "" {
		t.Error("the phase ran after the Ctrl-C")
	}
}

// TestCtrlCWhileHashingDirectory: a Ctrl-C while cairn hashes the files
// of a directory it knows nothing of, as it walks it (each file slowed by
// a failpoint), ends the run at once; the phase is not started, and the
// next run hashes what was left and runs it.
func TestCtrlCWhileHashingDirectory(t *testing.T) {
	w := newRelWS(t, `
phase "p" {
  inputs  = ["data"]
  command = "ls data | wc -l > out.txt"
  outputs = ["out.txt"]
}
`)
	for i := range 2000 {
		w.write(fmt.Sprintf("data/d%d/f%04d", i%2, i), fmt.Sprintf("file %d\n", i))
	}
	code, out := interruptOwnWork(t, w, "hash.file", []string{failpoint.EnvVar + "=hash.file=sleep(5)"}, "run", "--json")
	st := checkStoppedRun(t, w, code, out)
	if p := st.Phases["p"]; p.Status != runrec.StatusSkipped || !strings.Contains(p.Error, "not started") {
		t.Errorf("phase p: %s (%s), want skipped, not started", p.Status, p.Error)
	}
	if w.read("out.txt") != "" {
		t.Error("the phase ran after the Ctrl-C")
	}
	w.mustRun("run")
	if got := strings.TrimSpace(w.read("out.txt")); got != "2" {
		t.Errorf("out.txt = %q after the next run, want 2", got)
	}
}

// TestCtrlCWhileRestoring: a Ctrl-C while cairn restores an output of
// many files from the cache (each file slowed by a failpoint) ends the run
// at once; the phase is recorded stopped, and resume restores it whole.
func TestCtrlCWhileRestoring(t *testing.T) {
	const n = 2000
	w := newRelWS(t, fmt.Sprintf(`
phase "p" {
  command = "mkdir -p d && i=0; while [ $i -lt %d ]; do echo $i > d/f$i; i=$((i+1)); done"
  outputs = ["d"]
}
`, n))
	w.mustRun("run")
	if err := os.RemoveAll(w.path("d")); err != nil {
		t.Fatal(err)
	}
	code, out := interruptOwnWork(t, w, "restore.entry", []string{failpoint.EnvVar + "=restore.entry=sleep(5)"}, "run")
	st := checkStoppedRun(t, w, code, out)
	if p := st.Phases["p"]; p.Status != runrec.StatusStopped {
		t.Errorf("phase p: %s (%s), want stopped", p.Status, p.Error)
	}
	w.mustRun("resume")
	ents, err := os.ReadDir(w.path("d"))
	if err != nil || len(ents) != n {
		t.Fatalf("after resume d holds %d files (%v), want %d", len(ents), err, n)
	}
	if got := w.read("d/f1999"); got != "1999\n" {
		t.Errorf("d/f1999 = %q after resume", got)
	}
}

// TestCtrlCWhileDownloading: a Ctrl-C while cairn downloads a blob from a
// remote cache that sends its body a byte at a time ends the run at once.
func TestCtrlCWhileDownloading(t *testing.T) {
	var (
		mu   sync.Mutex
		objs = map[string][]byte{}
		slow = false
	)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut:
			var b bytes.Buffer
			b.ReadFrom(r.Body)
			mu.Lock()
			objs[r.URL.Path] = b.Bytes()
			mu.Unlock()
			rw.WriteHeader(http.StatusCreated)
		case http.MethodGet, http.MethodHead:
			mu.Lock()
			b, ok := objs[r.URL.Path]
			trickle := slow && strings.Contains(r.URL.Path, "/cas/")
			mu.Unlock()
			if !ok {
				http.NotFound(rw, r)
				return
			}
			rw.Header().Set("Content-Length", fmt.Sprint(len(b)))
			if !trickle || r.Method == http.MethodHead {
				rw.Write(b)
				return
			}
			// A byte at a time: never stalled, never done.
			f := rw.(http.Flusher)
			for i := range b {
				if _, err := rw.Write(b[i : i+1]); err != nil {
					return
				}
				f.Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
	}))
	defer srv.Close()
	spec := `
phase "p" {
  command = "head -c 4194304 /dev/urandom > out.bin"
  outputs = ["out.bin"]
}
`
	up := newRelWS(t, spec)
	code, out := func() (int, string) {
		var o bytes.Buffer
		cmd := up.cmd(&o, "run", "--remote-cache", srv.URL)
		return exitCode(cmd.Run()), o.String()
	}()
	if code != 0 {
		t.Fatalf("uploading run: exit %d\n%s", code, out)
	}
	mu.Lock()
	slow = true
	mu.Unlock()
	w := newRelWS(t, spec)
	code, out = interruptOwnWork(t, w, "remote.read", nil, "run", "--remote-cache", srv.URL)
	st := checkStoppedRun(t, w, code, out)
	if p := st.Phases["p"]; p.Status != runrec.StatusSkipped {
		t.Errorf("phase p: %s (%s), want skipped", p.Status, p.Error)
	}
}

// TestCtrlCWhileReadingSpec: a Ctrl-C while cairn run still reads its
// spec (held there by a failpoint) ends cairn at once with a line saying
// that nothing ran, and leaves no run record.
func TestCtrlCWhileReadingSpec(t *testing.T) {
	w := newRelWS(t, `
phase "p" {
  command = "echo ran > out.txt"
  outputs = ["out.txt"]
}
`)
	code, out := interruptOwnWork(t, w, "spec.read", []string{failpoint.EnvVar + "=spec.read=sleep(30000)"}, "run")
	if code != exitStopped {
		t.Errorf("exit code %d, want %d\n%s", code, exitStopped, out)
	}
	if !strings.Contains(out, "interrupted before the run started") {
		t.Errorf("no line saying the run did not start:\n%s", out)
	}
	if st := w.states(); len(st) != 0 {
		t.Errorf("%d run records, want none", len(st))
	}
	if w.read("out.txt") != "" {
		t.Error("the phase ran after the Ctrl-C")
	}
}

// TestHangup: SIGHUP (the terminal or ssh session closed) is a first
// Ctrl-C: the running phase finishes and is cached, the next is not
// started, cairn exits 130 with the closing line, and no process of the
// phase is left behind, a background one it started included.
func TestHangup(t *testing.T) {
	w := newRelWS(t, `
phase "a" {
  command = <<-SH
    sleep 300 &
    touch started
    while [ ! -e release ]; do sleep 0.01; done
    echo a > a.txt
  SH
  outputs = ["a.txt"]
}

phase "b" {
  inputs  = ["a.txt"]
  command = "cat a.txt > b.txt"
  outputs = ["b.txt"]
}
`)
	var out bytes.Buffer
	cmd := w.cmd(&out, "run")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.waitFiles("started")
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopping := make(chan struct{})
	go func() {
		defer close(stopping)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if st := w.states(); len(st) > 0 && st[len(st)-1].StopReason == engine.StopInterrupt {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var err error
	select {
	case err = <-done:
		// cairn died at the hangup instead of stopping gracefully.
	case <-stopping:
		w.write("release", "")
		err = <-done
	}
	if code := exitCode(err); code != exitStopped {
		t.Errorf("exit code %d, want %d\n%s", code, exitStopped, out.String())
	}
	if !strings.Contains(out.String(), "stopped (interrupt)") {
		t.Errorf("no closing line:\n%s", out.String())
	}
	if left := w.phaseProcs(); len(left) > 0 {
		t.Errorf("processes left behind after the hangup: %s", strings.Join(left, ", "))
	}
	st := w.latest()
	if st.Status != runrec.RunStopped || st.Phases["a"].Status != runrec.StatusSucceeded || st.Phases["b"].Status != runrec.StatusSkipped {
		t.Errorf("run %s, a %s, b %s; want stopped, succeeded, skipped", st.Status, st.Phases["a"].Status, st.Phases["b"].Status)
	}
}
