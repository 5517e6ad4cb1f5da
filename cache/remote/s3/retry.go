package s3

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/cairn-run/cairn/cache"
)

const maxRetryDelay = 5 * time.Second

// localError is a failure of the caller's reader (the local copy), not of
// the store: never retried.
type localError struct{ err error }

func (e *localError) Error() string { return "read local copy: " + e.err.Error() }
func (e *localError) Unwrap() error { return e.err }

// status returns the HTTP status of a failed request, or 0 if there was no
// answer.
func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// retryAfter returns the server's Retry-After (seconds form), or 0.
func retryAfter(err error) time.Duration {
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.Response == nil {
		return 0
	}
	s, err2 := strconv.Atoi(re.Response.Header.Get("Retry-After"))
	if err2 != nil || s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// retryable reports whether another attempt may help: throttling, a 5xx,
// a timeout or a connection that failed, but not a miss, a refusal, a bad
// request or a failure of the local copy.
func retryable(err error) bool {
	var le *localError
	if errors.As(err, &le) {
		return false
	}
	switch code := status(err); {
	case code == http.StatusTooManyRequests, code >= 500:
		return true
	case code != 0:
		return false
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "Throttling", "ThrottlingException":
			return true
		}
		return false
	}
	return true // no answer: reset, refused, timeout, short body
}

// call runs op until it succeeds, fails for good, or has been retried
// c.retries times; ctx ending stops it at once.
func (c *Client) call(ctx context.Context, op func(context.Context) error) error {
	for try := 0; ; try++ {
		err := op(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (%v)", context.Cause(ctx), firstLine(err))
		}
		if status(err) == http.StatusNotFound {
			return fmt.Errorf("%w", cache.ErrNotFound)
		}
		if try >= c.retries || !retryable(err) {
			return err
		}
		if err := c.backoff(ctx, try+1, retryAfter(err)); err != nil {
			return err
		}
	}
}

// backoff waits before retry number try: RetryDelay doubled per retry,
// capped, the upper half jittered so that parts that failed together do
// not retry together; at least the server's Retry-After.
func (c *Client) backoff(ctx context.Context, try int, after time.Duration) error {
	d := c.retryDelay << (try - 1)
	if d > maxRetryDelay || d <= 0 {
		d = maxRetryDelay
	}
	d = d/2 + rand.N(d/2+1)
	if after > d {
		d = after
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// firstLine keeps an SDK error to one line.
func firstLine(err error) string {
	s := err.Error()
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
