package progress

import (
	"strings"
	"sync"
	"testing"

	"github.com/cairn-run/cairn/engine"
	"github.com/cairn-run/cairn/runrec"
)

// writeLog records each Write call separately.
type writeLog struct {
	mu     sync.Mutex
	writes []string
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

// TestPlainViewBatchesCachedLines: the lines of cached phases go out in
// one write, before the next line that is not one of them; nothing is
// reordered or lost, and close flushes what is left.
func TestPlainViewBatchesCachedLines(t *testing.T) {
	out := &writeLog{}
	v := newPlainView(out, false)
	for _, p := range []string{"a", "b", "c"} {
		v.Report(engine.Event{Kind: engine.EventDone, Phase: p, Status: runrec.StatusCached})
	}
	v.mu.Lock()
	n := len(out.writes)
	v.mu.Unlock()
	if n != 0 {
		t.Fatalf("cached lines written one by one: %q", out.writes)
	}
	v.Report(engine.Event{Kind: engine.EventStart, Phase: "d"})
	v.Report(engine.Event{Kind: engine.EventDone, Phase: "e", Status: runrec.StatusRestored})
	v.Close(nil)
	if len(out.writes) != 2 {
		t.Errorf("%d writes, want 2 (the batch with the start line, then the rest at close): %q", len(out.writes), out.writes)
	}
	got := strings.Join(out.writes, "")
	want := "a: cached\nb: cached\nc: cached\n"
	if !strings.HasPrefix(got, want) || !strings.Contains(got, "e: restored\n") || !strings.HasSuffix(got, "e: restored\n") {
		t.Errorf("output %q, want the cached lines first and e's last", got)
	}
}
