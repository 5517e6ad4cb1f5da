package progress

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/internal/hashmeter"
)

const MiB = 1 << 20

func TestHashLine(t *testing.T) {
	for _, tc := range []struct {
		p    hashmeter.Progress
		want string
	}{
		{hashmeter.Progress{FilesDone: 48213, FilesTotal: 200000, BytesDone: 47 * MiB, BytesTotal: 195 * MiB, Elapsed: 1500 * time.Millisecond},
			"hashing inputs of scan: 48,213 of 200,000 files, 47.0 MiB of 195.0 MiB, 31.3 MiB/s, about 5s left"},
		// Nothing done yet: no rate, no time left.
		{hashmeter.Progress{FilesTotal: 4, BytesTotal: 16 << 30, Elapsed: time.Second},
			"hashing inputs of scan: 0 of 4 files, 0 B of 16.0 GiB"},
		{hashmeter.Progress{FilesDone: 1, FilesTotal: 4, BytesDone: 4 << 30, BytesTotal: 16 << 30, Elapsed: 40 * time.Second},
			"hashing inputs of scan: 1 of 4 files, 4.0 GiB of 16.0 GiB, 102.4 MiB/s, about 2m0s left"},
		// Rounded up, and never "0s left" while the line shows.
		{hashmeter.Progress{FilesDone: 999, FilesTotal: 1000, BytesDone: 999, BytesTotal: 1000, Elapsed: time.Second},
			"hashing inputs of scan: 999 of 1,000 files, 999 B of 1000 B, 999 B/s, about 1s left"},
		{hashmeter.Progress{FilesDone: 1000, FilesTotal: 1000, BytesDone: 1000, BytesTotal: 1000, Elapsed: time.Second},
			"hashing inputs of scan: 1,000 of 1,000 files, 1000 B of 1000 B, 1000 B/s, about 1s left"},
		// Empty files: the pace by files.
		{hashmeter.Progress{FilesDone: 1234567, FilesTotal: 2469134, Elapsed: 3 * time.Second},
			"hashing inputs of scan: 1,234,567 of 2,469,134 files, 0 B of 0 B, about 3s left"},
		// Hashed as they are found: what was found so far, no time left.
		{hashmeter.Progress{FilesDone: 48213, FilesTotal: 200000, BytesDone: 47 * MiB, BytesTotal: 195 * MiB, Elapsed: 1500 * time.Millisecond, Growing: true},
			"hashing inputs of scan: 48,213 of at least 200,000 files, 47.0 MiB of at least 195.0 MiB, 31.3 MiB/s"},
		// Every byte found is read at once: no bytes total to tell.
		{hashmeter.Progress{FilesDone: 101, FilesTotal: 300, BytesDone: 897, BytesTotal: 897, Elapsed: time.Second, Growing: true},
			"hashing inputs of scan: 101 of at least 300 files, 897 B, 897 B/s"},
	} {
		if d := cmp.Diff(tc.want, hashLine("scan", tc.p)); d != "" {
			t.Errorf("%+v (-want +got):\n%s", tc.p, d)
		}
	}
}

func TestGrouped(t *testing.T) {
	got := map[int64]string{}
	for _, n := range []int64{0, 7, 999, 1000, 12345, 999999, 1000000, -1234} {
		got[n] = grouped(n)
	}
	want := map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 12345: "12,345", 999999: "999,999", 1000000: "1,000,000", -1234: "-1,234"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("grouped (-want +got):\n%s", d)
	}
}

// The live region shows a phase's hashing once it has lasted a moment,
// above the running phases, and drops it when it ends; short hashing is
// never shown.
func TestTermHashing(t *testing.T) {
	v, _, clock := testView(false, 100, 24)
	v.Report(engine.Event{Kind: engine.EventBegin, Phases: []string{"scan", "quick", "train"}, Time: clock.t})
	v.Report(engine.Event{Kind: engine.EventStart, Phase: "train", Attempt: 1, Time: clock.t})
	clock.advance(2 * time.Second)
	p := hashmeter.Progress{FilesDone: 10, FilesTotal: 40, BytesDone: MiB, BytesTotal: 4 * MiB, Elapsed: 250 * time.Millisecond}
	v.HashProgress("scan", p)
	v.HashProgress("quick", hashmeter.Progress{FilesDone: 1, FilesTotal: 2, BytesDone: 1, BytesTotal: 2, Elapsed: 250 * time.Millisecond})
	v.HashProgress("quick", hashmeter.Progress{FilesDone: 2, FilesTotal: 2, BytesDone: 2, BytesTotal: 2, Elapsed: 300 * time.Millisecond, Final: true})
	before := v.frame(100, 24)
	p.FilesDone, p.BytesDone, p.Elapsed = 20, 2*MiB, time.Second
	v.HashProgress("scan", p)
	during := v.frame(100, 24)
	p.FilesDone, p.BytesDone, p.Elapsed, p.Final = 40, 4*MiB, 2*time.Second, true
	v.HashProgress("scan", p)
	after := v.frame(100, 24)
	running := "  train    2.0s"
	bar := "[                    ] 0/3  done 0 · cached 0 · running 1 · waiting 2"
	want := [][]string{
		{running, bar},
		{"  hashing inputs of scan: 20 of 40 files, 2.0 MiB of 4.0 MiB, 2.0 MiB/s, about 1s left", running, bar},
		{running, bar},
	}
	if d := cmp.Diff(want, [][]string{before, during, after}); d != "" {
		t.Errorf("frames before, during and after (-want +got):\n%s", d)
	}
}

// On a short terminal hashing takes at most half the room of the
// running phases, and the bar stays.
func TestTermHashingShortTerminal(t *testing.T) {
	v, _, clock := testView(false, 80, 6)
	v.Report(engine.Event{Kind: engine.EventBegin, Phases: []string{"a", "b", "c", "d"}, Time: clock.t})
	for _, ph := range []string{"a", "b", "c", "d"} {
		v.HashProgress(ph, hashmeter.Progress{FilesTotal: 2, BytesTotal: 2, Elapsed: time.Second})
	}
	got := v.frame(80, 6)
	want := []string{
		"  hashing inputs of a: 0 of 2 files, 0 B of 2 B",
		"  hashing inputs of b: 0 of 2 files, 0 B of 2 B",
		"[                    ] 0/4  done 0 · cached 0 · running 0 · waiting 4",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("frame (-want +got):\n%s", d)
	}
}

func TestJSONHashProgress(t *testing.T) {
	var buf strings.Builder
	v := newJSONView(&buf)
	v.HashProgress("scan", hashmeter.Progress{FilesTotal: 300, BytesTotal: 2592, Elapsed: 250 * time.Millisecond})
	v.HashProgress("scan", hashmeter.Progress{FilesDone: 100, FilesTotal: 300, BytesDone: 864, BytesTotal: 2592, Elapsed: 500 * time.Millisecond})
	v.HashProgress("scan", hashmeter.Progress{FilesDone: 300, FilesTotal: 300, BytesDone: 2592, BytesTotal: 2592, Elapsed: 1500 * time.Millisecond, Final: true})
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if _, err := time.Parse(time.RFC3339Nano, m["time"].(string)); err != nil {
			t.Errorf("time: %v", err)
		}
		delete(m, "time")
		got = append(got, m)
	}
	ev := func(files, bytes, rate float64) map[string]any {
		return map[string]any{"event": "hash_progress", "phase": "scan", "files_done": files, "files_total": 300.0,
			"bytes_done": bytes, "bytes_total": 2592.0, "rate_bytes_per_s": rate}
	}
	want := []map[string]any{ev(0, 0, 0), ev(100, 864, 1728), ev(300, 2592, 1728)}
	want[1]["eta_s"] = 1.0
	want[2]["eta_s"], want[2]["final"] = 0.0, true
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// Off a terminal, and with -q, no view takes hashing progress: the engine
// then starts no meter at all.
func TestPlainViewsTakeNoHashProgress(t *testing.T) {
	for _, o := range []Options{{}, {Quiet: true}, {Verbose: true}} {
		v := New(&strings.Builder{}, o)
		if _, ok := v.(hashmeter.Sink); ok {
			t.Errorf("New(%+v) takes hashing progress", o)
		}
		if m := hashmeter.Start(v, "scan", 10, 100); m != nil {
			t.Errorf("New(%+v): a meter started", o)
		}
		v.Close(nil)
	}
	if _, ok := New(&strings.Builder{}, Options{JSON: true}).(hashmeter.Sink); !ok {
		t.Errorf("the JSON view takes no hashing progress")
	}
}
