// Package hashmeter counts the files and bytes of one phase's hashing
// as the workers finish them, and reports how far it got at a bounded
// rate to whoever shows it (the run's live display, its --json events).
//
// The workers pay an atomic add per file, and per window of a large file
// (see Watch); the reports come from one ticker goroutine of the meter's
// own, started only when there is something to hash and someone to tell.
package hashmeter

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/internal/failpoint"
)

// Interval is how often a meter reports while hashing lasts: often
// enough for a live line, rarely enough that a JSON consumer is not
// flooded.
const Interval = 250 * time.Millisecond

// Sink receives the progress of a phase's hashing. A reporter given to
// the engine receives it when it implements Sink; calls come from the
// meter's goroutine, one phase's never two at a time.
type Sink interface {
	HashProgress(phase string, p Progress)
}

// Progress is how far one phase's hashing got.
type Progress struct {
	FilesDone, FilesTotal int64
	BytesDone, BytesTotal int64
	Elapsed               time.Duration
	// Growing says the totals may still grow: the inputs are hashed as
	// they are found (see StartGrowing), and some are not found yet.
	Growing bool
	// Final marks the last report of the hashing, sent when it ended
	// (done, failed or interrupted); its totals no longer grow.
	Final bool
}

// Rate is the bytes hashed per second so far; 0 before any time went
// by.
func (p Progress) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.BytesDone) / p.Elapsed.Seconds()
}

// ETA is the time left at the pace so far, by bytes (by files when the
// files are all empty); ok is false until something is done, and while
// the totals grow (what is left is not known yet).
func (p Progress) ETA() (left time.Duration, ok bool) {
	if p.Final {
		return 0, true
	}
	if p.Growing {
		return 0, false
	}
	done, total := p.BytesDone, p.BytesTotal
	if total == 0 {
		done, total = p.FilesDone, p.FilesTotal
	}
	if done <= 0 || p.Elapsed <= 0 {
		return 0, false
	}
	if done >= total {
		return 0, true
	}
	return time.Duration(float64(p.Elapsed) * float64(total-done) / float64(done)), true
}

// Meter counts one phase's hashing. A nil *Meter counts nothing and
// reports nothing, so callers need not check.
type Meter struct {
	files, bytes atomic.Int64
	filesTotal   atomic.Int64
	bytesTotal   atomic.Int64
	growing      atomic.Bool
	sink         Sink
	phase        string
	now          func() time.Time
	start        time.Time
	stop, done   chan struct{}
}

// Start returns a meter of files totalling bytes for phase, reporting to
// r if r is a Sink, every Interval and once more from Done. It returns nil
// (no goroutine, no report) when there is nothing to hash or nobody to
// tell.
func Start(r any, phase string, files int, bytes int64) *Meter {
	sink, ok := r.(Sink)
	if !ok || files == 0 {
		return nil
	}
	return newMeter(sink, phase, files, bytes, time.Now).ticking()
}

// StartGrowing returns a meter for phase whose inputs are hashed as they
// are found: it starts with no total, and Grow adds what each find adds
// (its reports say Growing until Settle or Done). It returns nil when r
// is not a Sink. A report with nothing counted yet is not sent.
func StartGrowing(r any, phase string) *Meter {
	sink, ok := r.(Sink)
	if !ok {
		return nil
	}
	m := newMeter(sink, phase, 0, 0, time.Now)
	m.growing.Store(true)
	return m.ticking()
}

// ticking starts m's reports.
func (m *Meter) ticking() *Meter {
	t := time.NewTicker(Interval)
	go func() {
		defer t.Stop()
		m.run(t.C)
	}()
	return m
}

func newMeter(sink Sink, phase string, files int, bytes int64, now func() time.Time) *Meter {
	m := &Meter{sink: sink, phase: phase, now: now, start: now(), stop: make(chan struct{}), done: make(chan struct{})}
	m.filesTotal.Store(int64(files))
	m.bytesTotal.Store(bytes)
	return m
}

// Grow adds files and bytes to the totals (negative: what was counted in
// them turned out not to be hashed under this meter).
func (m *Meter) Grow(files int, bytes int64) {
	if m == nil {
		return
	}
	if files != 0 {
		m.filesTotal.Add(int64(files))
	}
	if bytes != 0 {
		m.bytesTotal.Add(bytes)
	}
}

// Settle says the totals are complete: nothing is left to find.
func (m *Meter) Settle() {
	if m != nil {
		m.growing.Store(false)
	}
}

// run reports at every tick until Done.
func (m *Meter) run(tick <-chan time.Time) {
	defer close(m.done)
	for {
		select {
		case <-m.stop:
			return
		case <-tick:
			if p := m.progress(false); p.FilesTotal > 0 {
				m.sink.HashProgress(m.phase, p)
			}
		}
	}
}

// watchMin is the size from which a file's bytes are counted as its
// windows are hashed (see Window), not only once it is done: a few files
// of many GiB would otherwise show nothing for most of their hashing.
const watchMin = 16 << 20

// file is a large file being hashed under a meter: what Window counted
// of it so far.
type file struct {
	m       *Meter
	counted int64
}

type fileKey struct{}

// Watch returns the context to hash a file of size bytes under: for a
// large file, ctx carrying what Window needs to count its windows; for a
// small one (or a nil meter), ctx itself.
func (m *Meter) Watch(ctx context.Context, size int64) context.Context {
	if m == nil || size < watchMin {
		return ctx
	}
	return context.WithValue(ctx, fileKey{}, &file{m: m})
}

// Window counts n bytes of the file hashed under ctx (see Watch) as
// hashed, before the file is done; it does nothing under any other
// context. The file's hashing is one goroutine's.
func Window(ctx context.Context, n int64) {
	if f, ok := ctx.Value(fileKey{}).(*file); ok {
		f.counted += n
		f.m.bytes.Add(n)
	}
}

// Add counts the file hashed under ctx (see Watch), of size bytes as
// counted in Start's total, as hashed: size less what its windows
// counted already, so that the file counts size in all.
func (m *Meter) Add(ctx context.Context, size int64) {
	if m == nil {
		return
	}
	if f, ok := ctx.Value(fileKey{}).(*file); ok {
		size -= f.counted
	}
	m.bytes.Add(size)
	m.files.Add(1)
	_ = failpoint.Hit("hash.file")
}

// Done ends the hashing: the ticker stops, and the final report follows
// every other.
func (m *Meter) Done() {
	if m == nil {
		return
	}
	close(m.stop)
	<-m.done
	m.growing.Store(false)
	m.sink.HashProgress(m.phase, m.progress(true))
}

// Progress is how far the hashing is now.
func (m *Meter) Progress() Progress { return m.progress(false) }

func (m *Meter) progress(final bool) Progress {
	// The totals are read after what is done, and the growing mark
	// before them: a report never counts more done than in total, nor
	// says a total final that a worker was still growing.
	growing := m.growing.Load()
	p := Progress{FilesDone: m.files.Load(), BytesDone: m.bytes.Load(), Elapsed: m.now().Sub(m.start), Growing: growing, Final: final}
	p.FilesTotal, p.BytesTotal = m.filesTotal.Load(), m.bytesTotal.Load()
	return p
}
