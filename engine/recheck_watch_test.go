package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/runrec"
	"github.com/cairn-run/cairn/workspace/watch"
)

// watchable skips the test where dir's filesystem cannot be watched.
func watchable(t *testing.T, dir string) {
	t.Helper()
	w := watch.New()
	defer w.Close()
	d, err := os.Open(dir)
	must(t, err)
	defer d.Close()
	w.Dir(d)
	if err := w.Check(); err != nil {
		t.Skipf("no directory watch here: %v", err)
	}
}

// recheckWalks records the phases whose recheck expanded their inputs
// again.
func recheckWalks(t *testing.T) func() []string {
	var mu sync.Mutex
	var walked []string
	testHookRecheckWalk = func(addr string) {
		mu.Lock()
		walked = append(walked, addr)
		mu.Unlock()
	}
	t.Cleanup(func() { testHookRecheckWalk = nil })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), walked...)
	}
}

// TestRecheckWatched: a phase run on this kernel whose directory input
// stayed quiet is rechecked without a walk and cached; one run elsewhere
// is walked again; an edit made by the command is still caught.
func TestRecheckWatched(t *testing.T) {
	tests := []struct {
		name       string
		here       bool
		command    string
		wantWalked []string
		notCached  map[string]string
	}{
		{"on this kernel, nothing edited", true, "write out.txt x", nil, nil},
		{"elsewhere, nothing edited", false, "write out.txt x", []string{"p"}, nil},
		{"on this kernel, nested input edited", true, "write out.txt x; write data/sub/b.txt B",
			[]string{"p"}, map[string]string{"p": "input data/sub/b.txt changed while the phase ran"}},
		{"on this kernel, input added", true, "write out.txt x; write data/sub/c.txt c",
			[]string{"p"}, map[string]string{"p": "input data/sub/c.txt added while the phase ran"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSetup(t, map[string]string{
				"experiment.hcl": fmt.Sprintf("phase \"p\" {\n  command = %q\n  inputs  = [\"data/\", \"in.txt\"]\n  outputs = [\"out.txt\"]\n}\n", tt.command),
				"in.txt":         "in\n",
				"data/a.txt":     "a\n",
				"data/sub/b.txt": "b\n",
			})
			watchable(t, s.dir)
			calmFiles(t, s.dir, "in.txt", "data/a.txt", "data/sub/b.txt")
			s.exec.here = tt.here
			walked := recheckWalks(t)
			res := s.run(t, RunOptions{})
			if res.Status != runrec.RunSucceeded {
				t.Fatalf("run: %s", res.Status)
			}
			if diff := cmp.Diff(tt.wantWalked, walked()); diff != "" {
				t.Errorf("phases whose recheck walked (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.notCached, res.NotCached); diff != "" {
				t.Errorf("not cached (-want +got):\n%s", diff)
			}
			s.run(t, RunOptions{})
			if got, want := s.exec.count("p"), 1+len(tt.notCached); got != want {
				t.Errorf("p ran %d times over two runs, want %d", got, want)
			}
		})
	}
}

// TestRecheckWatchesClosed: whatever becomes of a phase (run, failed,
// skipped after a failure, cached, restored), no inotify instance or
// mount-table descriptor outlives the run.
func TestRecheckWatchesClosed(t *testing.T) {
	var b strings.Builder
	files := map[string]string{"data/a.txt": "a\n", "data/sub/b.txt": "b\n"}
	for i := range 24 {
		fmt.Fprintf(&b, "phase \"p%d\" {\n  command = \"write out%d.txt x\"\n  inputs  = [\"data/\"]\n  outputs = [\"out%d.txt\"]\n}\n", i, i, i)
	}
	// A failing phase whose dependants are skipped.
	b.WriteString("phase \"bad\" {\n  command = \"write bad.txt x\"\n  inputs  = [\"data/\"]\n  outputs = [\"bad.txt\"]\n}\n")
	b.WriteString("phase \"after\" {\n  command = \"write after.txt ${phase.bad.outputs[0]}\"\n  inputs  = [\"data/\"]\n  outputs = [\"after.txt\"]\n}\n")
	files["experiment.hcl"] = b.String()
	s := newSetup(t, files)
	watchable(t, s.dir)
	s.exec.here = true
	before := watchFDs(t)
	s.exec.fail = map[string]bool{"bad": true}
	s.run(t, RunOptions{Request: runrec.Request{Jobs: 4, KeepGoing: true}})
	s.exec.fail = nil
	for i := range 12 { // half restored, half cached
		must(t, os.Remove(filepath.Join(s.dir, fmt.Sprintf("out%d.txt", i))))
	}
	s.run(t, RunOptions{Request: runrec.Request{Jobs: 4}})
	// An inotify descriptor is closed by a goroutine of its own (the
	// kernel frees its marks meanwhile): wait for it, within reason.
	deadline := time.Now().Add(30 * time.Second)
	for got := watchFDs(t); got > before; got = watchFDs(t) {
		if time.Now().After(deadline) {
			t.Fatalf("%d inotify and mountinfo descriptors open after the runs, %d before", got, before)
		}
		time.Sleep(time.Millisecond)
	}
}

// watchFDs counts this process's open inotify instances and mount tables.
func watchFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if l == "anon_inode:inotify" || strings.HasSuffix(l, "/mountinfo") {
			n++
		}
	}
	return n
}
