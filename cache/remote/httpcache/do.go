package httpcache

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/cairn-run/cairn/cache"
)

// request is one operation; do sends it and retries it as needed.
type request struct {
	op     string // "get blob", "put entry", ... for messages
	id     string // short hex of the digest or key, for messages
	method string
	path   string // below the base URL: "cas/<hex>" or "ac/<hex>"
	// open returns a fresh upload body for each attempt (nil: no body).
	open func() (io.ReadCloser, error)
	size int64
	// max500 is how many times a 500 answer is retried, if not negative. A
	// CAS PUT sets 1: bazel-remote answers 500 to a body that does not
	// hash to its name, and sending the same bytes again will not help.
	max500 int
}

// failure says what the request loop does after a failed attempt.
type failure int

const (
	final     failure = iota // report it now
	transient                // the server answered 429 or 5xx: retry
	network                  // no answer (refused, DNS, timeout): retry; if that never works the server is down
	fatalNet                 // no answer and no point retrying (bad certificate): down now
)

// do sends r until it gets a 2xx answer, retrying transient and network
// failures up to c.retries times with jittered exponential backoff. On
// success the caller owns resp.Body and must call a.end when done with it.
// Errors are not yet prefixed with the operation (see fail).
func (c *Client) do(ctx context.Context, r *request) (*http.Response, *attempt, error) {
	timeouts, n500 := 0, 0
	for try := 0; ; try++ {
		if try > 0 {
			if err := c.backoff(ctx, try); err != nil {
				return nil, nil, err
			}
			c.stats.retries.Add(1)
		}
		if e := c.down.Load(); e != nil {
			return nil, nil, *e
		}
		resp, a, err := c.send(ctx, r)
		if a.upload != nil {
			// Whatever happened, the caller's reader is closed before
			// the caller hears of it (the transport may still hold it).
			a.upload.Close()
		}
		var kind failure
		if err == nil {
			if resp.StatusCode/100 == 2 {
				return resp, a, nil
			}
			kind, err = c.answerError(r, resp, a)
		} else {
			kind, err = c.transportError(ctx, a, err)
		}
		exhausted := try >= c.retries
		switch kind {
		case final:
			return nil, nil, err
		case fatalNet:
			return nil, nil, c.markDown(err)
		case transient:
			if se, ok := err.(*statusError); ok && se.Code == http.StatusInternalServerError && r.max500 >= 0 {
				n500++
				exhausted = exhausted || n500 > r.max500
			}
		case network:
			if a.timedOut() != "" {
				timeouts++
				exhausted = exhausted || timeouts >= maxTimeouts
			}
			if exhausted {
				return nil, nil, c.markDown(err)
			}
		}
		if exhausted {
			return nil, nil, err
		}
	}
}

// send makes one attempt. On success only the headers have been read; a
// keeps bounding the body.
func (c *Client) send(ctx context.Context, r *request) (*http.Response, *attempt, error) {
	actx, a := newAttempt(ctx, c.timeout, fmt.Sprintf("no response within %v", c.timeout))
	// Requests still waiting for an answer give up when another request
	// finds the server down.
	stopDown := context.AfterFunc(c.downCtx, a.cancel)
	defer stopDown()
	req, err := http.NewRequestWithContext(actx, r.method, c.name+r.path, nil)
	if err != nil {
		a.end()
		return nil, a, &finalError{err}
	}
	// Ask for the bytes as stored. Setting the header also stops Go's
	// transport from asking for gzip and decompressing behind our back.
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("User-Agent", "cairn")
	c.auth.apply(req)
	if r.open != nil {
		body, err := r.open()
		if err != nil {
			a.end()
			return nil, a, &finalError{fmt.Errorf("open local copy: %w", err)}
		}
		ub := &uploadBody{r: body, a: a, c: c, size: r.size}
		a.mu.Lock()
		a.upload = ub
		a.mu.Unlock()
		// Go's transport waits for its writer to leave the body's Read
		// before giving up on a request: closing the body when the
		// attempt ends releases a Read stuck in the caller's reader.
		context.AfterFunc(actx, func() { ub.Close() })
		req.Body, req.ContentLength = ub, r.size
	} else if r.method == http.MethodPut {
		req.Body = http.NoBody
	}
	c.stats.requests.Add(1)
	resp, err := c.hc.Do(req)
	if err != nil {
		a.end()
		return nil, a, err
	}
	a.disarm()
	if a.timedOut() != "" {
		// The timer fired as the headers arrived: the attempt is
		// cancelled, so its body is unreadable. Count it as a timeout.
		resp.Body.Close()
		return nil, a, context.DeadlineExceeded
	}
	return resp, a, nil
}

// finalError is a failure that no retry can help, such as the caller's
// upload body failing to open.
type finalError struct{ err error }

func (e *finalError) Error() string { return e.err.Error() }
func (e *finalError) Unwrap() error { return e.err }

// transportError classifies an error from sending a request.
func (c *Client) transportError(ctx context.Context, a *attempt, err error) (failure, error) {
	var fe *finalError
	switch {
	case errors.As(err, &fe):
		return final, fe.err
	case a.upload != nil && a.upload.failed() != nil:
		return final, a.upload.failed()
	case ctx.Err() != nil:
		return final, ctx.Err()
	case a.timedOut() != "" && a.stalledLocally():
		// The caller's reader, not the server, stopped moving (a hung
		// local disk): no retry, and no reason to think the server down.
		return final, fmt.Errorf("read local copy: stuck (%s): %w", a.timedOut(), os.ErrDeadlineExceeded)
	case a.timedOut() != "":
		return network, fmt.Errorf("%s: %w", a.timedOut(), os.ErrDeadlineExceeded)
	}
	if e := c.down.Load(); e != nil {
		return final, *e // cancelled because another request found the server down
	}
	if ue, ok := err.(*url.Error); ok {
		err = ue.Err // its message repeats the method and URL
	}
	var (
		unknownCA *x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
		verify    *tls.CertificateVerificationError
	)
	if errors.As(err, &unknownCA) || errors.As(err, &invalid) || errors.As(err, &hostname) || errors.As(err, &verify) {
		return fatalNet, err
	}
	return network, err
}

// answerError turns a non-2xx answer into an error, reading (and
// sanitizing) the start of its body for the message, and closes it.
func (c *Client) answerError(r *request, resp *http.Response, a *attempt) (failure, error) {
	a.arm(c.stall, fmt.Sprintf("error body made no progress for %v", c.stall))
	// Read a little so a small answer leaves the connection reusable.
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	a.end()
	code := resp.StatusCode
	switch {
	case code == http.StatusNotFound && r.method != http.MethodPut:
		c.stats.misses.Add(1)
		return final, cache.ErrNotFound
	case code/100 == 3:
		msg := "redirect to the same host not followed: more than 5 in a row, or a PUT (whose body is not sent twice)"
		// Only same-host redirects are followed, so the last request
		// went to the base's scheme and host.
		if loc, err := resp.Location(); err != nil || loc.Host != c.base.Host || loc.Scheme != c.base.Scheme {
			where := "an unparseable location"
			if err == nil {
				where = c.sanitize(loc.Scheme + "://" + loc.Host)
			}
			msg = fmt.Sprintf("redirect to %s not followed: only redirects to the same scheme and host are followed, so credentials stay with it", where)
		}
		return final, &statusError{Code: code, Msg: msg}
	}
	se := &statusError{Code: code, Msg: c.sanitize(string(head))}
	if code == http.StatusTooManyRequests || code/100 == 5 {
		return transient, se
	}
	return final, se
}

// backoff waits before retry number try (1, 2, ...): RetryDelay doubled
// per retry, capped, with the upper half jittered so that many goroutines
// that failed together do not retry together.
func (c *Client) backoff(ctx context.Context, try int) error {
	limit := max(maxRetryDelay, c.retryDelay)
	d := c.retryDelay << (try - 1)
	if d > limit || d <= 0 {
		d = limit
	}
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.downCtx.Done(): // the loop reports it
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// markDown records that the server is unreachable, warns once, and
// returns the error every call gets from now on.
func (c *Client) markDown(cause error) error {
	c.downOnce.Do(func() {
		var err error = &unavailableError{cause: cause}
		c.down.Store(&err)
		c.setDown()
		c.warn(c.auth.redact(fmt.Sprintf("warning: remote cache %s unreachable (%v); continuing with the local cache only", c.name, cause)))
	})
	return *c.down.Load()
}

// fail prefixes err with the client and operation, and scrubs it.
func (c *Client) fail(r *request, err error) error {
	return c.scrub(fmt.Errorf("remote cache %s: %s %s: %w", c.name, r.op, r.id, err))
}

// attempt is one HTTP exchange: its context, and one timer bounding the
// current wait (for headers, for a body to move), which cancels the
// exchange if it fires.
type attempt struct {
	cancel context.CancelFunc
	timer  *time.Timer

	mu         sync.Mutex
	upload     *uploadBody // nil without a body; set before the request is sent
	why        string      // what the timer bounds now
	fired      string      // what timed out, "" if nothing did
	localStall bool        // when it fired, the caller's reader was in a Read
}

// newAttempt starts an attempt whose timer is already armed for d.
func newAttempt(parent context.Context, d time.Duration, why string) (context.Context, *attempt) {
	ctx, cancel := context.WithCancel(parent)
	a := &attempt{cancel: cancel, why: why}
	a.timer = time.AfterFunc(d, a.fire)
	return ctx, a
}

func (a *attempt) fire() {
	a.mu.Lock()
	if a.fired == "" {
		a.fired = a.why
		a.localStall = a.upload != nil && a.upload.reading.Load()
	}
	a.mu.Unlock()
	a.cancel()
}

// stalledLocally reports whether the timer fired while the caller's
// reader, not the server, was holding things up.
func (a *attempt) stalledLocally() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.localStall
}

// arm restarts the timer: unless arm or disarm is called again within d,
// the attempt is cancelled and timedOut returns why.
func (a *attempt) arm(d time.Duration, why string) {
	a.mu.Lock()
	a.why = why
	a.mu.Unlock()
	a.timer.Reset(d)
}

func (a *attempt) disarm() { a.timer.Stop() }

// timedOut says what timed out, or "" if nothing did.
func (a *attempt) timedOut() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fired
}

// end releases the attempt; its connection is closed if still in use.
func (a *attempt) end() {
	a.timer.Stop()
	a.cancel()
}
