// Package guard puts the same two limits on every remote cache backend:
// each operation has a deadline scaled to its size, with a floor on
// throughput, and after a few failures in a row, or one stalled transfer,
// the remote is switched off for the rest of the process with one warning,
// and the run goes on with the local cache.
//
// Without it, each phase of a run would rediscover a broken remote on its
// own: a server answering 500 to every upload, one that sends headers and
// then stalls, or one that trickles a body at a byte a second would cost
// every lookup and every upload its full retries and timeouts.
package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
)

// Backend is a remote cache backend.
type Backend = remote.Backend

var _ Backend = (*Guard)(nil)

// Defaults for the zero values of [Options].
const (
	DefaultTimeout  = 10 * time.Second
	DefaultMinRate  = 256 << 10 // bytes per second
	DefaultFailures = 3
	// entryAllowance is the size an entry's deadline is scaled for: its
	// size is not known before it arrives.
	entryAllowance = 1 << 20
)

// Options configures a [Guard].
type Options struct {
	// Timeout is what any operation may take beyond its size at MinRate:
	// connecting, the first byte, the answer to an upload. Default 10 s.
	Timeout time.Duration
	// MinRate is the slowest throughput, in bytes per second, a transfer
	// may keep up. Default 256 KiB/s.
	MinRate int64
	// Failures is how many operations in a row may fail before the remote
	// is switched off. Default 3.
	Failures int
	// Stop, when done, ends every operation at once (the run was
	// interrupted). Default: never.
	Stop context.Context
	// Warn receives the one warning. Default: discard.
	Warn func(string)
}

// ErrDeadline is the cause of an operation the guard cut short.
var ErrDeadline = errors.New("remote cache operation exceeded its deadline")

var errSwitchedOff = errors.New("remote cache switched off")

// Guard wraps a backend; it is safe for concurrent use.
type Guard struct {
	b        Backend
	timeout  time.Duration
	minRate  int64
	failures int32
	stop     context.Context
	warn     func(string)

	inRow atomic.Int32
	off   atomic.Pointer[error]
	once  sync.Once
	// offCtx is done once the remote is switched off: operations still in
	// flight (retrying, waiting on a stalled body) end with it.
	offCtx context.Context
	setOff context.CancelFunc
}

// Wrap returns b behind a guard.
func Wrap(b Backend, o Options) *Guard {
	g := &Guard{b: b, timeout: o.Timeout, minRate: o.MinRate, failures: int32(o.Failures), stop: o.Stop, warn: o.Warn}
	if g.timeout <= 0 {
		g.timeout = DefaultTimeout
	}
	if g.minRate <= 0 {
		g.minRate = DefaultMinRate
	}
	if g.failures <= 0 {
		g.failures = DefaultFailures
	}
	if g.stop == nil {
		g.stop = context.Background()
	}
	if g.warn == nil {
		g.warn = func(string) {}
	}
	g.offCtx, g.setOff = context.WithCancel(context.Background())
	return g
}

// Unwrap returns the backend behind the guard.
func (g *Guard) Unwrap() Backend { return g.b }

// String names the backend.
func (g *Guard) String() string { return g.b.String() }

// Off reports whether the remote was switched off.
func (g *Guard) Off() bool { return g.off.Load() != nil }

// allowed is the time an operation moving n bytes may take.
func (g *Guard) allowed(n int64) time.Duration {
	return g.timeout + time.Duration(float64(n)/float64(g.minRate)*float64(time.Second))
}

// begin returns the context an operation runs under: the caller's, ended
// also by Stop and, with cause ErrDeadline, after d.
func (g *Guard) begin(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc, error) {
	if e := g.off.Load(); e != nil {
		return nil, nil, *e
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := g.watch(cancel)
	t := time.AfterFunc(d, func() { cancel(ErrDeadline) })
	return ctx, func() { t.Stop(); stop(); cancel(nil) }, nil
}

// watch ends an operation when the run is interrupted or the remote is
// switched off; the returned func stops watching.
func (g *Guard) watch(cancel context.CancelCauseFunc) func() {
	s1 := context.AfterFunc(g.stop, func() { cancel(context.Canceled) })
	s2 := context.AfterFunc(g.offCtx, func() { cancel(errSwitchedOff) })
	return func() { s1(); s2() }
}

// end counts the outcome of an operation and returns the error to report.
// local is the failure of the caller's own reader, if any: not the
// remote's fault.
func (g *Guard) end(ctx context.Context, op string, err error, local error) error {
	if err == nil || errors.Is(err, cache.ErrNotFound) {
		g.inRow.Store(0)
		return err
	}
	switch {
	case local != nil:
		return err
	case errors.Is(err, remote.ErrUnavailable):
		g.switchOff(err, "") // the backend has warned
		return err
	case context.Cause(ctx) == errSwitchedOff:
		return *g.off.Load()
	case context.Cause(ctx) == ErrDeadline:
		return g.switchOff(err, fmt.Sprintf("%s did not finish in time (no answer, a stalled or too slow transfer)", op))
	case ctx.Err() != nil:
		return err // interrupted: not the remote's fault
	}
	if n := g.inRow.Add(1); n >= g.failures {
		return g.switchOff(err, fmt.Sprintf("%d operations in a row failed, the last: %v", n, err))
	}
	return err
}

// switchOff makes every later operation fail at once with an error
// wrapping remote.ErrUnavailable; the first call warns (unless why is
// empty: the backend warned itself).
func (g *Guard) switchOff(cause error, why string) error {
	g.once.Do(func() {
		var e error = &offError{name: g.b.String(), cause: cause}
		g.off.Store(&e)
		g.setOff()
		if why != "" {
			g.warn(fmt.Sprintf("warning: remote cache %s: %s; switched off for the rest of this run, continuing with the local cache only", g.b.String(), why))
		}
	})
	return *g.off.Load()
}

type offError struct {
	name  string
	cause error
}

func (e *offError) Error() string {
	return fmt.Sprintf("remote cache %s switched off for this run (%v)", e.name, e.cause)
}
func (e *offError) Unwrap() []error { return []error{remote.ErrUnavailable, e.cause} }

// HasBlob asks the backend, within Timeout.
func (g *Guard) HasBlob(ctx context.Context, d cache.Digest) (bool, error) {
	ctx, done, err := g.begin(ctx, g.timeout)
	if err != nil {
		return false, err
	}
	defer done()
	ok, err := g.b.HasBlob(ctx, d)
	return ok, g.end(ctx, "head blob "+d.Short(), err, nil)
}

// GetEntry fetches an entry within Timeout plus a megabyte at MinRate.
func (g *Guard) GetEntry(ctx context.Context, key cache.ActionID) ([]byte, error) {
	ctx, done, err := g.begin(ctx, g.allowed(entryAllowance))
	if err != nil {
		return nil, err
	}
	defer done()
	b, err := g.b.GetEntry(ctx, key)
	return b, g.end(ctx, "get entry "+key.Short(), err, nil)
}

// PutEntry uploads an entry within Timeout plus its size at MinRate.
func (g *Guard) PutEntry(ctx context.Context, key cache.ActionID, b []byte) error {
	ctx, done, err := g.begin(ctx, g.allowed(int64(len(b))))
	if err != nil {
		return err
	}
	defer done()
	return g.end(ctx, "put entry "+key.Short(), g.b.PutEntry(ctx, key, b), nil)
}

// PutBlob uploads a blob within Timeout plus its size at MinRate.
func (g *Guard) PutBlob(ctx context.Context, d cache.Digest, size int64, open func() (io.ReadCloser, error)) error {
	ctx, done, err := g.begin(ctx, g.allowed(size))
	if err != nil {
		return err
	}
	defer done()
	var local atomic.Pointer[error]
	wrapped := func() (io.ReadCloser, error) {
		rc, err := open()
		if err != nil {
			local.Store(&err)
			return nil, err
		}
		return &localReader{rc: rc, local: &local}, nil
	}
	err = g.b.PutBlob(ctx, d, size, wrapped)
	var le error
	if p := local.Load(); p != nil {
		le = *p
	}
	return g.end(ctx, "put blob "+d.Short(), err, le)
}

type localReader struct {
	rc    io.ReadCloser
	local *atomic.Pointer[error]
}

func (l *localReader) Read(p []byte) (int, error) {
	n, err := l.rc.Read(p)
	if err != nil && err != io.EOF {
		l.local.Store(&err)
	}
	return n, err
}

func (l *localReader) Close() error { return l.rc.Close() }

// OpenBlob starts a download whose deadline moves with its progress: at
// any time it may have taken Timeout plus the bytes so far at MinRate. A
// body that stalls, or trickles slower than MinRate, is cut off.
func (g *Guard) OpenBlob(ctx context.Context, d cache.Digest) (io.ReadCloser, error) {
	if e := g.off.Load(); e != nil {
		return nil, *e
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := g.watch(cancel)
	r := &blobReader{g: g, ctx: ctx, cancel: cancel, stop: stop, op: "get blob " + d.Short(), start: time.Now()}
	r.t = time.AfterFunc(g.timeout, func() { cancel(ErrDeadline) })
	rc, err := g.b.OpenBlob(ctx, d)
	if err != nil {
		r.release()
		return nil, g.end(ctx, r.op, err, nil)
	}
	r.rc = rc
	return r, nil
}

type blobReader struct {
	g      *Guard
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   func()
	t      *time.Timer
	rc     io.ReadCloser
	op     string
	start  time.Time
	n      int64
	ended  bool
	once   sync.Once
}

func (r *blobReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.n += int64(n)
	if n > 0 {
		// Timeout plus the bytes so far at MinRate, from the start.
		r.t.Reset(time.Until(r.start.Add(r.g.allowed(r.n))))
	}
	if err == nil || r.ended {
		return n, err
	}
	r.ended = true
	if err == io.EOF {
		r.g.end(r.ctx, r.op, nil, nil)
		return n, err
	}
	if context.Cause(r.ctx) == ErrDeadline {
		err = fmt.Errorf("%w after %d bytes in %v: %w", ErrDeadline, r.n, time.Since(r.start).Round(time.Millisecond), err)
	}
	return n, r.g.end(r.ctx, r.op, err, nil)
}

func (r *blobReader) release() {
	r.once.Do(func() {
		r.t.Stop()
		r.stop()
		r.cancel(nil)
	})
}

func (r *blobReader) Close() error {
	err := r.rc.Close()
	r.release()
	return err
}
