package phasefile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/cairn-run/cairn/runrec"
)

// ReportWatcher follows a phase's $CAIRN_REPORT file while it runs and
// sums what it reports. onChange is called (from the watcher's goroutine
// or from Finish) after each new batch of lines with the running total;
// onBad for each malformed line with its 1-based number.
type ReportWatcher struct {
	path     string
	onChange func(total runrec.Spend)
	onBad    func(lineNo int, line string, err error)

	mu      sync.Mutex
	off     int64
	lineNo  int
	partial []byte
	// long is set while the rest of a line already reported as too long
	// is skipped: it counts once, up to its newline.
	long     bool
	total    runrec.Spend
	sawCost  bool
	stop     chan struct{}
	done     chan struct{}
	interval time.Duration
}

// NewReportWatcher follows path from byte offset off; lines before it
// belong to earlier attempts and are not counted again.
func NewReportWatcher(path string, off int64, lineNo int, interval time.Duration, onChange func(runrec.Spend), onBad func(int, string, error)) *ReportWatcher {
	return &ReportWatcher{path: path, off: off, lineNo: lineNo, onChange: onChange, onBad: onBad, interval: interval}
}

// Position returns the offset and line count read so far.
func (w *ReportWatcher) Position() (int64, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.off, w.lineNo
}

// Start begins polling; call Finish when the phase has ended.
func (w *ReportWatcher) Start() {
	w.stop = make(chan struct{})
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		t := time.NewTicker(w.interval)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.poll(false)
			}
		}
	}()
}

// Finish stops polling and reads what is left, a last line without a
// newline included. It returns the total.
func (w *ReportWatcher) Finish() (runrec.Spend, bool) {
	if w.stop != nil {
		close(w.stop)
		<-w.done
		w.stop = nil
	}
	w.poll(true)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total, w.sawCost
}

// poll reads what was appended since the last poll, at most 1 MiB of it
// so that a runaway writer cannot make cairn hold its whole report in
// memory. The final poll reads to the end, 1 MiB at a time: the phase is
// over and every line it wrote counts.
func (w *ReportWatcher) poll(final bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, err := os.Open(w.path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(w.off, io.SeekStart); err != nil {
		return
	}
	for !w.readChunk(f, final) && final {
	}
}

// maxReportLine is the longest report line read; a longer one is one bad
// line.
const maxReportLine = 64 << 10

// readChunk takes the lines in up to 1 MiB read from f and reports
// whether it reached the end of f. At the end of the final poll, a last
// line without a newline counts too.
func (w *ReportWatcher) readChunk(f io.Reader, final bool) (eof bool) {
	const chunk = 1 << 20
	buf, _ := io.ReadAll(io.LimitReader(f, chunk))
	eof = len(buf) < chunk
	w.off += int64(len(buf))
	data := append(w.partial, buf...)
	if w.long {
		// The rest of a line reported as too long: skip to its end.
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			data = nil
		} else {
			data = data[i+1:]
			w.long = false
		}
	}
	changed := false
	for !w.long {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		changed = w.take(data[:i]) || changed
		data = data[i+1:]
	}
	if final && eof && len(bytes.TrimSpace(data)) > 0 {
		changed = w.take(data) || changed
		data = nil
	}
	if len(data) > maxReportLine {
		// A line this long is not a report; count it as one bad line,
		// whatever its length.
		w.lineNo++
		w.onBad(w.lineNo, string(data[:80])+"...", errors.New("line longer than 64 KiB"))
		data = nil
		w.long = true
	}
	w.partial = append([]byte(nil), data...)
	if changed && w.onChange != nil {
		w.onChange(w.total)
	}
	return eof
}

func (w *ReportWatcher) take(line []byte) bool {
	w.lineNo++
	if len(bytes.TrimSpace(line)) == 0 {
		return false
	}
	r, err := runrec.ParseReportLine(line)
	if err != nil {
		text := string(line)
		if len(text) > 200 {
			text = text[:200] + "..."
		}
		w.onBad(w.lineNo, text, err)
		return false
	}
	w.total = w.total.Add(r.Spend)
	w.sawCost = w.sawCost || r.HasCost
	return true
}
