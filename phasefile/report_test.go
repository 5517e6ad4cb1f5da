package phasefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/runrec"
)

// TestReportWatcher appends lines in pieces, a line split across polls
// and a bad line included, and checks the running total and warnings.
func TestReportWatcher(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var totals []runrec.Spend
	var bad []int
	w := NewReportWatcher(path, 0, 0, time.Hour, func(s runrec.Spend) { totals = append(totals, s) }, func(n int, _ string, _ error) { bad = append(bad, n) })
	write := func(s string) {
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"cost": 0.1}` + "\n" + `{"cost": 0.`)
	w.poll(false)
	write("2, \"iterations\": 2}\nnonsense\n")
	w.poll(false)
	write(`{"cost": 0.3}`) // no newline: only counted at the end
	w.poll(false)
	total, saw := w.Finish()
	if want := (runrec.Spend{Cost: 0.6, Iterations: 2}); total != want || !saw {
		t.Errorf("total = %+v, %v; want %+v, true", total, saw, want)
	}
	if diff := cmp.Diff([]runrec.Spend{{Cost: 0.1}, {Cost: 0.3, Iterations: 2}, {Cost: 0.6, Iterations: 2}}, totals); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{3}, bad); diff != "" {
		t.Errorf("bad lines (-want +got):\n%s", diff)
	}
	// A second attempt starts where the first stopped.
	off, line := w.Position()
	write("\n" + `{"cost": 1}` + "\n")
	w2 := NewReportWatcher(path, off, line, time.Hour, nil, func(int, string, error) {})
	if total, _ := w2.Finish(); total != (runrec.Spend{Cost: 1}) {
		t.Errorf("second attempt total = %+v, want cost 1", total)
	}
}

// TestReportWatcherLongLine: a line longer than the watcher reads at once
// counts as one bad line, and the lines after it keep their true numbers.
func TestReportWatcherLongLine(t *testing.T) {
	tests := map[string]struct {
		content string
		polls   int // polls before the final one
		want    []int
		total   runrec.Spend
	}{
		"3 MiB line":       {content: strings.Repeat("x", 3<<20) + "\n" + `{"cost": 1}` + "\nbad\n", want: []int{1, 3}, total: runrec.Spend{Cost: 1}},
		"long line at end": {content: `{"cost": 1}` + "\n" + strings.Repeat("y", 2<<20), want: []int{2}, total: runrec.Spend{Cost: 1}},
		"polled meanwhile": {content: strings.Repeat("z", 100<<10) + "\n" + strings.Repeat("z", 70<<10) + "\n" + `{"iterations": 2}` + "\n", polls: 2, want: []int{1, 2}, total: runrec.Spend{Iterations: 2}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.jsonl")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			var bad []int
			w := NewReportWatcher(path, 0, 0, time.Hour, nil, func(n int, _ string, _ error) { bad = append(bad, n) })
			for range tt.polls {
				w.poll(false)
			}
			total, _ := w.Finish()
			if diff := cmp.Diff(tt.want, bad); diff != "" {
				t.Errorf("bad lines (-want +got):\n%s", diff)
			}
			if total != tt.total {
				t.Errorf("total = %+v, want %+v", total, tt.total)
			}
		})
	}
}
