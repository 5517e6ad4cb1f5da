package guard

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
)

// fake is a backend whose every call returns err, and whose blob body
// blocks until its context ends.
type fake struct {
	err   error
	calls int
	mu    sync.Mutex
}

func (f *fake) count() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.err
}

type stalled struct{ ctx context.Context }

func (s stalled) Read([]byte) (int, error) { <-s.ctx.Done(); return 0, context.Cause(s.ctx) }
func (s stalled) Close() error             { return nil }

func (f *fake) OpenBlob(ctx context.Context, d cache.Digest) (io.ReadCloser, error) {
	if err := f.count(); err != nil {
		return nil, err
	}
	return stalled{ctx}, nil
}
func (f *fake) HasBlob(ctx context.Context, d cache.Digest) (bool, error) { return false, f.count() }
func (f *fake) PutBlob(ctx context.Context, d cache.Digest, size int64, open func() (io.ReadCloser, error)) error {
	if err := f.count(); err != nil {
		return err
	}
	rc, err := open()
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}
func (f *fake) GetEntry(ctx context.Context, key cache.ActionID) ([]byte, error) {
	return nil, f.count()
}
func (f *fake) PutEntry(ctx context.Context, key cache.ActionID, b []byte) error { return f.count() }
func (f *fake) String() string                                                   { return "fake://" }

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk error") }
func (failingReader) Close() error             { return nil }

// TestSwitchOff: which failures count toward switching the remote off,
// and that it warns once and then fails every call without asking.
func TestSwitchOff(t *testing.T) {
	boom := errors.New("500 Internal Server Error")
	for _, tc := range []struct {
		name      string
		err       error
		op        func(g *Guard) error
		wantCalls int // calls reaching the backend in 6 tries
		wantWarn  int
	}{
		{"server errors", boom, func(g *Guard) error { return g.PutEntry(context.Background(), cache.ActionID{}, nil) }, 3, 1},
		{"misses", cache.ErrNotFound, func(g *Guard) error { _, err := g.GetEntry(context.Background(), cache.ActionID{}); return err }, 6, 0},
		{"local copy fails", nil, func(g *Guard) error {
			return g.PutBlob(context.Background(), cache.Digest{}, 1, func() (io.ReadCloser, error) { return failingReader{}, nil })
		}, 6, 0},
		{"backend says unreachable", remote.ErrUnavailable, func(g *Guard) error { _, err := g.HasBlob(context.Background(), cache.Digest{}); return err }, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{err: tc.err}
			var warns []string
			g := Wrap(f, Options{Warn: func(s string) { warns = append(warns, s) }})
			for range 6 {
				tc.op(g)
			}
			if diff := cmp.Diff([]int{tc.wantCalls, tc.wantWarn}, []int{f.calls, len(warns)}); diff != "" {
				t.Errorf("calls, warnings (-want +got):\n%s\n%s", diff, strings.Join(warns, "\n"))
			}
			if tc.wantCalls < 6 {
				if err := tc.op(g); !errors.Is(err, remote.ErrUnavailable) {
					t.Errorf("after switch-off: %v, want ErrRemoteUnavailable", err)
				}
			}
		})
	}
}

// TestStalledDownloadSwitchesOff: a body that makes no progress is cut at
// Timeout, and one stall switches the remote off.
func TestStalledDownloadSwitchesOff(t *testing.T) {
	var warns []string
	g := Wrap(&fake{}, Options{Timeout: 50 * time.Millisecond, Warn: func(s string) { warns = append(warns, s) }})
	rc, err := g.OpenBlob(context.Background(), cache.Digest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(rc)
	rc.Close()
	if !errors.Is(err, ErrDeadline) {
		t.Fatalf("read of a stalled body: %v, want ErrDeadline", err)
	}
	if len(warns) != 1 || !g.Off() {
		t.Fatalf("off %v, warnings %q; want off with one warning", g.Off(), warns)
	}
}

// TestStopEndsTransfer: Stop ends a download at once, and does not count
// against the remote.
func TestStopEndsTransfer(t *testing.T) {
	stop, cancel := context.WithCancel(context.Background())
	g := Wrap(&fake{}, Options{Timeout: time.Hour, Stop: stop})
	rc, err := g.OpenBlob(context.Background(), cache.Digest{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(rc); done <- err }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("read after stop: %v, want context.Canceled", err)
	}
	if g.Off() {
		t.Error("an interrupt switched the remote off")
	}
}

// TestAllowed: the deadline grows with size at the throughput floor.
func TestAllowed(t *testing.T) {
	g := Wrap(&fake{}, Options{Timeout: time.Second, MinRate: 1 << 20})
	got := []time.Duration{g.allowed(0), g.allowed(1 << 20), g.allowed(100 << 20)}
	want := []time.Duration{time.Second, 2 * time.Second, 101 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}
