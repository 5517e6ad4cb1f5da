package hashmeter

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRateAndETA(t *testing.T) {
	const MiB = 1 << 20
	for _, tc := range []struct {
		name   string
		p      Progress
		rate   float64
		left   time.Duration
		leftOK bool
	}{
		{"nothing done yet", Progress{FilesTotal: 10, BytesTotal: 100 * MiB, Elapsed: time.Second}, 0, 0, false},
		{"no time went by", Progress{FilesDone: 1, FilesTotal: 10, BytesDone: MiB, BytesTotal: 10 * MiB}, 0, 0, false},
		{"a quarter in 2s", Progress{FilesDone: 5, FilesTotal: 20, BytesDone: 25 * MiB, BytesTotal: 100 * MiB, Elapsed: 2 * time.Second}, 12.5 * MiB, 6 * time.Second, true},
		// By bytes, not files: one large file left is most of the work.
		{"files ahead of bytes", Progress{FilesDone: 9, FilesTotal: 10, BytesDone: 10 * MiB, BytesTotal: 100 * MiB, Elapsed: time.Second}, 10 * MiB, 9 * time.Second, true},
		{"empty files: by files", Progress{FilesDone: 200, FilesTotal: 1000, Elapsed: time.Second}, 0, 4 * time.Second, true},
		{"all counted, not ended", Progress{FilesDone: 3, FilesTotal: 3, BytesDone: 30, BytesTotal: 30, Elapsed: time.Second}, 30, 0, true},
		{"totals growing", Progress{FilesDone: 5, FilesTotal: 20, BytesDone: 25 * MiB, BytesTotal: 100 * MiB, Elapsed: 2 * time.Second, Growing: true}, 12.5 * MiB, 0, false},
		{"final", Progress{FilesDone: 3, FilesTotal: 3, BytesDone: 30, BytesTotal: 30, Elapsed: 3 * time.Second, Final: true}, 10, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			left, ok := tc.p.ETA()
			got := []any{tc.p.Rate(), left, ok}
			if d := cmp.Diff([]any{tc.rate, tc.left, tc.leftOK}, got); d != "" {
				t.Errorf("rate, ETA, ok (-want +got):\n%s", d)
			}
		})
	}
}

type report struct {
	Phase string
	P     Progress
}

type recorder struct {
	mu   sync.Mutex
	got  []report
	seen chan struct{} // if not nil, gets a value after each report
}

func (r *recorder) HashProgress(phase string, p Progress) {
	r.mu.Lock()
	r.got = append(r.got, report{phase, p})
	r.mu.Unlock()
	if r.seen != nil {
		r.seen <- struct{}{}
	}
}

// A meter reports at each tick what the workers counted so far, and a
// final report after every other from Done.
func TestMeterReports(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ctx := context.Background()
	rec := recorder{seen: make(chan struct{}, 1)}
	m := newMeter(&rec, "scan", 4, 1000, func() time.Time { return clock })
	tick := make(chan time.Time)
	go m.run(tick)
	m.Add(ctx, 100)
	m.Add(ctx, 300)
	clock = clock.Add(time.Second)
	tick <- clock
	<-rec.seen
	m.Add(ctx, 0)
	clock = clock.Add(time.Second)
	tick <- clock
	<-rec.seen
	m.Add(ctx, 600)
	clock = clock.Add(500 * time.Millisecond)
	m.Done()
	want := []report{
		{"scan", Progress{FilesDone: 2, FilesTotal: 4, BytesDone: 400, BytesTotal: 1000, Elapsed: time.Second}},
		{"scan", Progress{FilesDone: 3, FilesTotal: 4, BytesDone: 400, BytesTotal: 1000, Elapsed: 2 * time.Second}},
		{"scan", Progress{FilesDone: 4, FilesTotal: 4, BytesDone: 1000, BytesTotal: 1000, Elapsed: 2500 * time.Millisecond, Final: true}},
	}
	if d := cmp.Diff(want, rec.got); d != "" {
		t.Errorf("reports (-want +got):\n%s", d)
	}
}

// A growing meter reports nothing before anything is found, says its
// totals may grow until Settle, and ends final with what was found.
func TestGrowingMeter(t *testing.T) {
	// The clock is locked: the tick without a report leaves no point
	// at which the ticker is known to be done reading it.
	var mu sync.Mutex
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	ctx := context.Background()
	rec := recorder{seen: make(chan struct{}, 1)}
	m := newMeter(&rec, "scan", 0, 0, now)
	m.growing.Store(true)
	tick := make(chan time.Time)
	go m.run(tick)
	tick <- now() // nothing found: no report
	m.Grow(3, 0)
	m.Grow(0, 100)
	m.Add(ctx, 100)
	advance(time.Second)
	tick <- now()
	<-rec.seen
	m.Grow(0, 50)
	m.Grow(-1, 0) // found, then not hashed under this meter
	m.Settle()
	m.Add(ctx, 50)
	advance(time.Second)
	tick <- now()
	<-rec.seen
	m.Done()
	want := []report{
		{"scan", Progress{FilesDone: 1, FilesTotal: 3, BytesDone: 100, BytesTotal: 100, Elapsed: time.Second, Growing: true}},
		{"scan", Progress{FilesDone: 2, FilesTotal: 2, BytesDone: 150, BytesTotal: 150, Elapsed: 2 * time.Second}},
		{"scan", Progress{FilesDone: 2, FilesTotal: 2, BytesDone: 150, BytesTotal: 150, Elapsed: 2 * time.Second, Final: true}},
	}
	if d := cmp.Diff(want, rec.got); d != "" {
		t.Errorf("reports (-want +got):\n%s", d)
	}
	if m := StartGrowing(struct{}{}, "scan"); m != nil {
		t.Errorf("StartGrowing without a sink returned a meter")
	}
}

// Nothing to hash, or nobody to tell: no meter, no goroutine, no report,
// and the nil meter's methods are no-ops.
func TestStartNothing(t *testing.T) {
	var rec recorder
	for _, tc := range []struct {
		name  string
		r     any
		files int
	}{
		{"no files", &rec, 0},
		{"not a sink", struct{}{}, 10},
		{"nil", nil, 10},
	} {
		m := Start(tc.r, "scan", tc.files, 100)
		if m != nil {
			t.Errorf("%s: Start returned a meter", tc.name)
		}
		m.Add(context.Background(), 10)
		m.Done()
	}
	if len(rec.got) != 0 {
		t.Errorf("reports: %+v, want none", rec.got)
	}
}

// Add is what the hashing workers pay per file.
func BenchmarkAdd(b *testing.B) {
	m := newMeter(&recorder{}, "scan", 1, 1, time.Now)
	ctx := m.Watch(context.Background(), 4096)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Add(ctx, 4096)
		}
	})
}

// A large file's bytes count as its windows are hashed, and the file
// counts its size in all once done, even when its hashing fell back to
// reading it whole after some windows; a small file's count when done.
func TestWindows(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var rec recorder
	const big = 3 * watchMin
	m := newMeter(&rec, "scan", 3, 2*big+10, func() time.Time { return clock })
	snap := func() [2]int64 { p := m.progress(false); return [2]int64{p.FilesDone, p.BytesDone} }
	var got [][2]int64

	ctx := m.Watch(context.Background(), big)
	Window(ctx, watchMin)
	got = append(got, snap())
	Window(ctx, watchMin)
	Window(ctx, watchMin)
	got = append(got, snap())
	m.Add(ctx, big)
	got = append(got, snap())

	// Two windows, then a fallback to reading the file: no more windows.
	ctx = m.Watch(context.Background(), big)
	Window(ctx, watchMin)
	Window(ctx, watchMin)
	got = append(got, snap())
	m.Add(ctx, big)
	got = append(got, snap())

	small := m.Watch(context.Background(), 10)
	Window(small, 10) // not watched: counts nothing until done
	got = append(got, snap())
	m.Add(small, 10)
	got = append(got, snap())

	want := [][2]int64{
		{0, watchMin}, {0, big}, {1, big},
		{1, big + 2*watchMin}, {2, 2 * big},
		{2, 2 * big}, {3, 2*big + 10},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("files and bytes done after each step (-want +got):\n%s", d)
	}
	// A nil meter watches nothing.
	var nilm *Meter
	if c := nilm.Watch(context.Background(), big); c != context.Background() {
		t.Errorf("a nil meter's Watch returned a new context")
	}
}
