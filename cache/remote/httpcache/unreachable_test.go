package httpcache

import (
	"errors"
	"net"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestUnreachable points a client at a closed port and calls it from many
// goroutines: every call fails with ErrUnavailable within a bounded time,
// the warning is given exactly once, and once the client is down it sends
// nothing more.
func TestUnreachable(t *testing.T) {
	addr := closedPort(t)
	var w warnings
	c := newClient(t, "http://"+addr+"/", testOptions(&w))
	blob, d := randomBlob(21, 100)

	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 64*5)
	for range 64 {
		wg.Go(func() {
			_, err := c.OpenBlob(t.Context(), d)
			errs <- err
			_, err = c.HasBlob(t.Context(), d)
			errs <- err
			_, err = c.GetEntry(t.Context(), cache.ActionID(d))
			errs <- err
			errs <- c.PutBlob(t.Context(), d, int64(len(blob)), staticBody(blob))
			errs <- c.PutEntry(t.Context(), cache.ActionID(d), blob)
		})
	}
	wg.Wait()
	close(errs)
	wall := time.Since(start)
	for err := range errs {
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("error = %v, want ErrUnavailable", err)
		}
		if errors.Is(err, cache.ErrNotFound) {
			t.Errorf("unreachable is not a plain miss: %v", err)
		}
	}
	// Refused connections fail at once: the cost is a few milliseconds of
	// backoff, not the timeout. The bound is generous for a loaded CI
	// machine; the request count below is the exact check.
	if limit := 20 * time.Second; wall > limit {
		t.Errorf("320 calls took %v, want less than %v", wall, limit)
	}

	msgs := w.list()
	if len(msgs) != 1 {
		t.Fatalf("warned %d times, want once: %q", len(msgs), msgs)
	}
	re := regexp.MustCompile(`^warning: remote cache http://` + regexp.QuoteMeta(addr) + `/ unreachable \(dial tcp ` + regexp.QuoteMeta(addr) + `: connect: connection refused\); continuing with the local cache only$`)
	if !re.MatchString(msgs[0]) {
		t.Errorf("warning = %q, want it to match %s", msgs[0], re)
	}

	// Down: later calls send nothing and fail at once.
	before := c.Stats()
	if !before.Down {
		t.Errorf("Stats().Down = false after the server was found unreachable")
	}
	for range 100 {
		if _, err := c.OpenBlob(t.Context(), d); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("OpenBlob when down: %v, want ErrUnavailable", err)
		}
	}
	if after := c.Stats(); after.Requests != before.Requests {
		t.Errorf("%d requests sent after the client went down, want 0", after.Requests-before.Requests)
	}
	t.Logf("unreachable: %d requests, %d retries before going down, %v for 320 concurrent calls; warning: %s", before.Requests, before.Retries, wall.Round(time.Millisecond), msgs[0])
}

// TestUnresponsive points a client at a server that accepts connections
// but never answers: a request times out waiting for headers, is retried
// once more (maxTimeouts), and then the client is down. Requests waiting
// at that moment give up at once.
func TestUnresponsive(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	url := newHTTPServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release) })
	var w warnings
	o := testOptions(&w)
	o.Timeout = 500 * time.Millisecond
	c := newClient(t, url, o)

	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := c.OpenBlob(t.Context(), cache.Digest{1}); !errors.Is(err, ErrUnavailable) {
				t.Errorf("OpenBlob = %v, want ErrUnavailable", err)
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if limit := 20 * time.Second; wall > limit {
		t.Errorf("took %v, want at most about 2 timeouts (limit %v)", wall, limit)
	}
	msgs := w.list()
	if len(msgs) != 1 || !regexp.MustCompile(`unreachable \(no response within 500ms: i/o timeout\); continuing`).MatchString(msgs[0]) {
		t.Errorf("warnings = %q, want one about the timeout", msgs)
	}
	t.Logf("unresponsive: %d requests in %v; warning: %s", c.Stats().Requests, wall.Round(time.Millisecond), msgs)
}
