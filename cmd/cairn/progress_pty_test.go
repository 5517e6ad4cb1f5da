package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"

	"github.com/cairn-run/cairn/internal/testkit"
)

// ptySpec has two phases in a row; each says it started, prints a line
// and waits until the test releases it.
const ptySpec = `
phase "first" {
  command = "echo hello from first; touch first.started; while [ ! -e release.first ]; do sleep 0.02; done; echo 1 > out/first.txt"
  outputs = ["out/first.txt"]
}

phase "second" {
  command = "cat ${phase.first.outputs[0]} > /dev/null; touch second.started; while [ ! -e release.second ]; do sleep 0.02; done; echo 2 > out/second.txt"
  outputs = ["out/second.txt"]
}
`

// liveLine matches the start of a running phase's line in the live
// region: after a newline, or after the erase that begins a redraw.
const liveLine = `(?:\n|\x1b\[J)  `

// ptyRun is cairn running in a pseudo-terminal; everything it writes is
// collected.
type ptyRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{} // closed when the output ended
}

func startInPty(t *testing.T, bin, dir string, args ...string) *ptyRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CAIRN_CACHE_DIR="+filepath.Join(dir, ".cache"), "NO_COLOR=1", "TERM=xterm-256color")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 100})
	if err != nil {
		t.Fatalf("start cairn in a pty: %v", err)
	}
	r := &ptyRun{t: t, cmd: cmd, tty: tty, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				// EIO once the process and its children closed the tty.
				return
			}
		}
	}()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			_, _ = r.cmd.Process.Wait()
		}
		tty.Close()
	})
	return r
}

func (r *ptyRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// waitOutput waits until the output so far matches re.
func (r *ptyRun) waitOutput(re string) {
	r.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(60 * time.Second)
	for !rx.MatchString(r.output()) {
		select {
		case <-r.done:
			if !rx.MatchString(r.output()) {
				r.t.Fatalf("output ended without %q:\n%s", re, testkit.Visible(r.output()))
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no %q in the output after 60s:\n%s", re, testkit.Visible(r.output()))
		}
	}
}

// wait waits for the output to end and the process to exit, and returns
// the output and the exit code.
func (r *ptyRun) wait() (string, int) {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		r.t.Fatalf("cairn still writing after 60s:\n%s", testkit.Visible(r.output()))
	}
	err := r.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		r.t.Fatal(err)
	}
	return r.output(), r.cmd.ProcessState.ExitCode()
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTerminalProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairn")
	}
	bin := buildCairn(t)

	t.Run("run", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "experiment.hcl"), []byte(ptySpec), 0o644); err != nil {
			t.Fatal(err)
		}
		r := startInPty(t, bin, dir, "run", "-v")
		// The running line of first, redrawn by the ticker once at least
		// a tenth of a second went by.
		r.waitOutput(liveLine + `first\s+0\.[1-9]s`)
		touch(t, filepath.Join(dir, "release.first"))
		r.waitOutput(liveLine + `second\s+0\.[1-9]s`)
		touch(t, filepath.Join(dir, "release.second"))
		out, code := r.wait()
		if code != 0 {
			t.Fatalf("exit code %d, want 0:\n%s", code, testkit.Visible(out))
		}
		t.Logf("output:\n%s", testkit.Visible(out))

		// Redrawn in place: back to column one, up, erase below.
		if !strings.Contains(out, "\r"+ansi.CursorUp(2)+ansi.EraseScreenBelow) {
			t.Errorf("no cursor-up and erase: the region is not redrawn in place")
		}
		order := []string{
			`\[first\] hello from first`,
			liveLine + `first `,
			`first: ran in`,
			liveLine + `second `,
			`second: ran in`,
			`PHASE +STATUS +DURATION +COST`,
			`first +succeeded`,
			`second +succeeded`,
			`run `,
		}
		at := 0
		for _, re := range order {
			loc := regexp.MustCompile(re).FindStringIndex(out[at:])
			if loc == nil {
				t.Fatalf("%q not found after byte %d (want, in order: %q):\n%s", re, at, order, testkit.Visible(out))
			}
			at += loc[1]
		}
		if !regexp.MustCompile(`\r\nrun \S+ succeeded: 2 phases: 2 ran, 0 cached, 0 restored in [^\r\n]*\r\n$`).MatchString(out) {
			t.Errorf("output does not end with the closing line:\n%q", out[max(0, len(out)-200):])
		}
		testkit.CheckCleanEnd(t, out)
	})

	t.Run("interrupt", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "experiment.hcl"), []byte(ptySpec), 0o644); err != nil {
			t.Fatal(err)
		}
		r := startInPty(t, bin, dir, "run")
		r.waitOutput(liveLine + `first\s+0\.[1-9]s`)
		// Ctrl-C: the terminal sends SIGINT to cairn; first goes on.
		if _, err := r.tty.Write([]byte{3}); err != nil {
			t.Fatal(err)
		}
		r.waitOutput(`stopping: no new phase starts`)
		touch(t, filepath.Join(dir, "release.first"))
		out, code := r.wait()
		t.Logf("output:\n%s", testkit.Visible(out))
		if code != exitStopped {
			t.Errorf("exit code %d, want %d", code, exitStopped)
		}
		for _, want := range []string{"first: ran in", "second  skipped", "stopped: 2 phases: 1 ran", "stopped (interrupt)"} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in the output", want)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "second.started")); err == nil {
			t.Errorf("second started after Ctrl-C")
		}
		testkit.CheckCleanEnd(t, out)
	})
}
