package httpcache

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// blobReader hands a response body to the caller. It fails, rather than
// return io.EOF, if the body ends before its Content-Length or runs past
// it, and fails if one Read waits StallTimeout without a byte arriving.
// Errors are sticky.
type blobReader struct {
	c     *Client
	r     *request
	body  io.ReadCloser
	a     *attempt
	want  int64 // Content-Length, -1 if not announced
	n     int64
	err   error
	stall string
	once  sync.Once
}

func (c *Client) newBlobReader(r *request, body io.ReadCloser, a *attempt, want int64) *blobReader {
	return &blobReader{c: c, r: r, body: body, a: a, want: want,
		stall: fmt.Sprintf("download made no progress for %v", c.stall)}
}

func (b *blobReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	b.a.arm(b.c.stall, b.stall)
	n, err := b.body.Read(p)
	b.a.disarm()
	if b.want >= 0 && b.n+int64(n) > b.want {
		n = int(b.want - b.n)
		err = fmt.Errorf("body is longer than its Content-Length %d", b.want)
	}
	b.n += int64(n)
	b.c.stats.bytesDown.Add(int64(n))
	switch {
	case err == nil:
		return n, nil
	case err == io.EOF && (b.want < 0 || b.n == b.want):
		b.err = io.EOF
		return n, io.EOF
	case err == io.EOF:
		err = fmt.Errorf("body ended after %d of %d bytes: %w", b.n, b.want, io.ErrUnexpectedEOF)
	case b.a.timedOut() != "":
		err = fmt.Errorf("%s after %d bytes: %w", b.a.timedOut(), b.n, os.ErrDeadlineExceeded)
	default:
		err = fmt.Errorf("read body after %d bytes: %w", b.n, err)
	}
	b.err = b.c.fail(b.r, err)
	return n, b.err
}

// Close releases the response; it may be called before the end.
func (b *blobReader) Close() error {
	b.once.Do(func() {
		b.body.Close()
		b.a.end()
	})
	return nil
}

// uploadBody is the body of one PUT attempt. It checks that the caller's
// reader yields exactly size bytes, bounds stalls, and records a local
// failure so it is reported as such and not retried.
//
// It holds back the last bytes until the caller's reader has reported
// io.EOF: the reader checks the digest at the end, and a server that has
// received every byte may store the object whatever happens next.
type uploadBody struct {
	a    *attempt
	c    *Client
	size int64
	err  atomic.Pointer[error]

	// Only the transport's writer reads, one Read at a time. Close may
	// come from any goroutine, during a Read: as for any request body, the
	// caller's reader must allow that (os.File and io.Pipe do), and it is
	// how a Read stuck in the caller's reader is released.
	r       io.ReadCloser
	n       int64
	eof     bool
	closed  atomic.Bool
	once    sync.Once
	reading atomic.Bool // inside the caller's Read: a stall now is local
}

func (b *uploadBody) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, errClosed
	}
	if b.eof {
		return 0, io.EOF
	}
	b.reading.Store(true)
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err == nil && b.n == b.size {
		err = b.confirmEnd()
	}
	b.reading.Store(false)
	switch {
	case b.n > b.size:
		err = fmt.Errorf("local copy is longer than its size %d", b.size)
	case err == io.EOF && b.n < b.size:
		err = fmt.Errorf("local copy ended after %d of %d bytes", b.n, b.size)
	}
	if err != nil && err != io.EOF {
		if b.closed.Load() {
			return 0, errClosed // the attempt was abandoned: not the copy's fault
		}
		err = fmt.Errorf("read local copy: %w", err)
		b.err.Store(&err)
		return 0, err
	}
	b.c.stats.bytesUp.Add(int64(n))
	if err == io.EOF || b.n == b.size {
		b.eof = true
		b.a.arm(b.c.timeout, fmt.Sprintf("no response within %v after the upload", b.c.timeout))
		return n, nil
	}
	b.a.arm(b.c.stall, fmt.Sprintf("upload made no progress for %v", b.c.stall))
	return n, nil
}

// confirmEnd reads past the last byte: nil at io.EOF, else an error.
func (b *uploadBody) confirmEnd() error {
	var one [1]byte
	for range 100 {
		m, err := b.r.Read(one[:])
		if m > 0 {
			b.n += int64(m)
			return nil // the caller reports "longer than its size"
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

// failed returns the local failure, if any.
func (b *uploadBody) failed() error {
	if e := b.err.Load(); e != nil {
		return *e
	}
	return nil
}

// Close closes the caller's reader once. Both the transport (perhaps
// after the request is over) and the request loop call it.
func (b *uploadBody) Close() error {
	b.once.Do(func() {
		b.closed.Store(true)
		b.r.Close()
	})
	return nil
}

var errClosed = errors.New("upload body read after close")
