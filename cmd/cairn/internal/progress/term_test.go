package progress

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/internal/testkit"
	"github.com/cairn-run/cairn/runrec"
)

// fakeClock is the time a termView under test sees.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testView is a termView drawing into a buffer at a fixed size.
func testView(color bool, width, height int) (*termView, *bytes.Buffer, *fakeClock) {
	var buf bytes.Buffer
	clock := &fakeClock{t: t0}
	v := newTermViewWith(&buf, color, clock.now, func() (int, int) { return width, height })
	return v, &buf, clock
}

// midRun drives v to the middle of a five-phase run: prepare cached,
// fetch succeeded with spending, train on its second attempt with
// spending reported, eval running, report waiting.
func midRun(v *termView, clock *fakeClock) {
	v.Report(engine.Event{Kind: engine.EventBegin, Message: "20260102-030405-abcdef",
		Phases: []string{"prepare", "fetch", "train", "eval-with-a-rather-long-name", "report"}, Time: clock.t})
	v.Report(engine.Event{Kind: engine.EventDone, Phase: "prepare", Status: runrec.StatusCached, Duration: 3 * time.Millisecond, Time: clock.t})
	v.Report(engine.Event{Kind: engine.EventStart, Phase: "fetch", Attempt: 1, Reasons: []string{"new phase"}, Time: clock.t})
	v.Report(engine.Event{Kind: engine.EventStart, Phase: "train", Attempt: 1, Reasons: []string{"new phase"}, Time: clock.t})
	clock.advance(1500 * time.Millisecond)
	v.Report(engine.Event{Kind: engine.EventSpend, Phase: "fetch", Spend: runrec.Spend{Cost: 0.25}, Time: clock.t})
	v.Report(engine.Event{Kind: engine.EventDone, Phase: "fetch", Status: runrec.StatusSucceeded, Duration: 1500 * time.Millisecond, Time: clock.t})
	v.Report(engine.Event{Kind: engine.EventRetry, Phase: "train", Attempt: 2, Message: "phase train failed: exit status 1; retrying in 1s (attempt 2 of 3)", Time: clock.t})
	clock.advance(time.Second)
	v.Report(engine.Event{Kind: engine.EventStart, Phase: "train", Attempt: 2, Time: clock.t})
	v.Report(engine.Event{Kind: engine.EventStart, Phase: "eval-with-a-rather-long-name", Attempt: 1, Time: clock.t})
	clock.advance(2300 * time.Millisecond)
	v.Report(engine.Event{Kind: engine.EventSpend, Phase: "train", Spend: runrec.Spend{Cost: 1.5, Iterations: 1200}, Time: clock.t})
	clock.advance(200 * time.Millisecond)
}

func TestTermFrame(t *testing.T) {
	var got strings.Builder
	for _, size := range [][2]int{{80, 24}, {40, 24}, {24, 24}} {
		v, _, clock := testView(false, size[0], size[1])
		midRun(v, clock)
		fmt.Fprintf(&got, "-- %dx%d --\n", size[0], size[1])
		for _, l := range v.frame(size[0], size[1]) {
			if w := ansi.StringWidth(l); w >= size[0] {
				t.Errorf("width %d: line %q is %d columns wide: it would wrap", size[0], l, w)
			}
			got.WriteString(l + "\n")
		}
	}
	testkit.Golden(t, "testdata/frame.txt", []byte(got.String()))
}

// A terminal too short for every running phase gets as many as fit and a
// count of the others: the region never scrolls.
func TestTermFrameShortTerminal(t *testing.T) {
	v, _, clock := testView(false, 60, 6)
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("p%02d", i))
	}
	v.Report(engine.Event{Kind: engine.EventBegin, Phases: names, Time: clock.t})
	for _, n := range names {
		v.Report(engine.Event{Kind: engine.EventStart, Phase: n, Attempt: 1, Time: clock.t})
	}
	clock.advance(75 * time.Second)
	want := []string{
		"  p00   1m15s",
		"  p01   1m15s",
		"  p02   1m15s",
		"  … and 7 more running",
		"[        ] 0/10  done 0 · cached 0 · running 10 · waiting 0",
	}
	if diff := cmp.Diff(want, v.frame(60, 6)); diff != "" {
		t.Errorf("frame (-want +got):\n%s", diff)
	}
}

// The bytes written to the terminal for a whole run: the region is drawn
// below the permanent lines and redrawn in place (cursor up, erase
// below), the cursor is hidden while it is live and shown again at the
// end, and a summary table precedes the closing line.
func TestTermStream(t *testing.T) {
	v, buf, clock := testView(false, 72, 24)
	midRun(v, clock)
	v.Report(engine.Event{Kind: engine.EventWarning, Message: "phase train has max_cost 2 but reported no cost", Time: clock.t})
	v.Report(engine.Event{Kind: engine.EventStopping, Message: engine.StopInterrupt, Time: clock.t})
	clock.advance(time.Second)
	v.Report(engine.Event{Kind: engine.EventDone, Phase: "train", Status: runrec.StatusFailed, Duration: 3500 * time.Millisecond,
		Err: errors.New("phase train failed: exit status 1 (log: .cairn/runs/x/logs/train.stderr)"), Time: clock.t})
	v.Report(engine.Event{Kind: engine.EventDone, Phase: "eval-with-a-rather-long-name", Status: runrec.StatusStopped, Duration: 3500 * time.Millisecond, Time: clock.t})
	v.Close(&engine.RunResult{RunID: "20260102-030405-abcdef", Status: runrec.RunStopped, Duration: 6 * time.Second,
		Counts:   map[string]int{runrec.StatusCached: 1, runrec.StatusSucceeded: 1, runrec.StatusFailed: 1, runrec.StatusStopped: 1, runrec.StatusSkipped: 1},
		Spent:    runrec.Spend{Cost: 1.75, Iterations: 1200},
		Failures: map[string]error{"train": errors.New("x")}})
	out := buf.String()
	testkit.Golden(t, "testdata/stream.txt", []byte(testkit.Visible(out)))

	// Whatever the golden file says: the terminal is left clean.
	if i, j := strings.LastIndex(out, ansi.HideCursor), strings.LastIndex(out, ansi.ShowCursor); i < 0 || j < i {
		t.Errorf("cursor hidden at %d, shown at %d: want it hidden and then shown", i, j)
	}
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("output does not end with a newline: %q", out[max(0, len(out)-40):])
	}
	// Closing twice (the deferred close after an early one) prints nothing more.
	n := buf.Len()
	v.Close(nil)
	if buf.Len() != n {
		t.Errorf("second close wrote %q", buf.String()[n:])
	}
}

// A run that could not start (its lock is held) still leaves the cursor
// shown and prints no table.
func TestTermCloseWithoutResult(t *testing.T) {
	v, buf, clock := testView(false, 72, 24)
	v.Report(engine.Event{Kind: engine.EventBegin, Phases: []string{"a"}, Time: clock.t})
	v.Close(nil)
	got := testkit.Visible(buf.String())
	want := `\e[?25l[                    ] 0/1  done 0 · cached 0 · running 0 · waiting 1` + "\n" + `\r\e[A\e[J\e[?25h`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// Big runs list the phases that did something and count the others.
func TestTermTableBigRun(t *testing.T) {
	v, _, clock := testView(false, 100, 40)
	var names []string
	for i := range 30 {
		names = append(names, fmt.Sprintf("shard[%d]", i))
	}
	v.Report(engine.Event{Kind: engine.EventBegin, Phases: names, Time: clock.t})
	for i, n := range names {
		ev := engine.Event{Kind: engine.EventDone, Phase: n, Status: runrec.StatusCached, Time: clock.t}
		switch {
		case i == 3:
			ev.Status, ev.Duration, ev.Spend = runrec.StatusSucceeded, 90*time.Second, runrec.Spend{Cost: 0.3}
		case i == 7:
			ev.Status, ev.Duration, ev.Err = runrec.StatusFailed, 1200*time.Millisecond, errors.New("boom")
		case i == 8:
			ev.Status = runrec.StatusRestored
		case i >= 27:
			continue // never reached: skipped
		}
		v.Report(ev)
	}
	var b strings.Builder
	v.table(&b)
	// All cached: no table at all.
	all, _, _ := testView(false, 100, 40)
	all.Report(engine.Event{Kind: engine.EventBegin, Phases: names, Time: clock.t})
	for _, n := range names {
		all.Report(engine.Event{Kind: engine.EventDone, Phase: n, Status: runrec.StatusCached, Time: clock.t})
	}
	var none strings.Builder
	if all.table(&none); none.Len() > 0 {
		t.Errorf("all cached: got a table:\n%s", none.String())
	}
	want := `
PHASE     STATUS     DURATION  COST
shard[3]  succeeded  1m30s     0.3
shard[7]  failed     1.2s      -
24 cached, 1 restored, 3 skipped not listed

`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// NO_COLOR: no colour codes at all; with colour, statuses are coloured.
func TestTermColor(t *testing.T) {
	for _, color := range []bool{false, true} {
		v, buf, clock := testView(color, 80, 24)
		midRun(v, clock)
		v.Close(&engine.RunResult{RunID: "r", Status: runrec.RunSucceeded, Counts: map[string]int{}})
		if got := sgr.MatchString(buf.String()); got != color {
			t.Errorf("color %v: output has colour codes: %v\n%s", color, got, testkit.Visible(buf.String()))
		}
	}
}

func TestPrefixWriter(t *testing.T) {
	tests := map[string]struct {
		writes []string
		want   []string
	}{
		"lines":            {[]string{"a\nb\n"}, []string{"[p] a", "[p] b"}},
		"split":            {[]string{"he", "llo\nwor", "ld\n"}, []string{"[p] hello", "[p] world"}},
		"unfinished":       {[]string{"a\nrest"}, []string{"[p] a", "[p] rest"}},
		"crlf":             {[]string{"a\r\n"}, []string{"[p] a"}},
		"empty line":       {[]string{"\n"}, []string{"[p] "}},
		"nothing":          {nil, nil},
		"long without end": {[]string{strings.Repeat("x", maxLine+1)}, []string{"[p] " + strings.Repeat("x", maxLine+1)}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			w := newPrefixWriter("[p] ", func(l string) { got = append(got, l) })
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// -q keeps warnings and failures; the plain view fills in the spending a
// phase reported before it ended.
func TestPlainView(t *testing.T) {
	events := []engine.Event{
		{Kind: engine.EventBegin, Phases: []string{"a", "b", "c"}},
		{Kind: engine.EventStart, Phase: "a", Attempt: 1, Reasons: []string{"new phase"}},
		{Kind: engine.EventSpend, Phase: "a", Spend: runrec.Spend{Cost: 2, Iterations: 10}},
		{Kind: engine.EventDone, Phase: "a", Status: runrec.StatusSucceeded, Duration: 1500 * time.Millisecond},
		{Kind: engine.EventWarning, Message: "cache usage not recorded"},
		{Kind: engine.EventDone, Phase: "b", Status: runrec.StatusFailed, Duration: 20 * time.Millisecond, Err: errors.New("phase b failed: exit status 1")},
		{Kind: engine.EventDone, Phase: "c", Status: runrec.StatusBlocked, Reasons: []string{"upstream b did not succeed"}},
	}
	for _, quiet := range []bool{false, true} {
		var buf bytes.Buffer
		v := New(&buf, Options{Quiet: quiet})
		for _, ev := range events {
			v.Report(ev)
		}
		want := `a: running (new phase)
a: ran in 1.5s, spent cost 2, 10 iterations
warning: cache usage not recorded
b: failed after 20ms: phase b failed: exit status 1
c: blocked (upstream b did not succeed)
`
		if quiet {
			want = `warning: cache usage not recorded
b: failed after 20ms: phase b failed: exit status 1
`
		}
		if diff := cmp.Diff(want, buf.String()); diff != "" {
			t.Errorf("quiet %v (-want +got):\n%s", quiet, diff)
		}
	}
}

// The live view with its ticker, fed from many goroutines at once as the
// engine does (run with -race): it ends clean, every line printed.
func TestTermViewConcurrent(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r)
		got <- b.String()
	}()
	v := newTermView(w, true)
	names := make([]string, 8)
	for i := range names {
		names[i] = fmt.Sprintf("p%d", i)
	}
	v.Report(engine.Event{Kind: engine.EventBegin, Phases: names, Time: time.Now()})
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			v.Report(engine.Event{Kind: engine.EventStart, Phase: n, Attempt: 1, Time: time.Now()})
			out, _ := v.PhaseOutput(n)
			for i := range 50 {
				fmt.Fprintf(out, "line %d\n", i)
				v.Report(engine.Event{Kind: engine.EventSpend, Phase: n, Spend: runrec.Spend{Cost: float64(i)}, Time: time.Now()})
			}
			out.Close()
			// Stay running across a tick, so that the ticker draws while
			// events come in (nothing below depends on it).
			time.Sleep(refresh)
			v.Report(engine.Event{Kind: engine.EventDone, Phase: n, Status: runrec.StatusSucceeded, Time: time.Now()})
		})
	}
	wg.Wait()
	v.Close(&engine.RunResult{RunID: "r", Status: runrec.RunSucceeded, Counts: map[string]int{runrec.StatusSucceeded: 8}})
	w.Close()
	out := <-got
	for _, n := range names {
		if c := strings.Count(out, "["+n+"]"); c != 50 {
			t.Errorf("%d output lines of %s, want 50", c, n)
		}
		if !strings.Contains(out, n+": ") {
			t.Errorf("no finished line for %s", n)
		}
	}
	testkit.CheckCleanEnd(t, out)
}
