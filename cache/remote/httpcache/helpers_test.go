package httpcache

import (
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
)

// noEnv is an empty environment, so tests never see the real credentials.
func noEnv(string) string { return "" }

// envMap is a test environment.
type envMap map[string]string

func (e envMap) get(k string) string { return e[k] }

// warnings records the messages a client warns with.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) warn(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// Test timings. No test waits for testTimeout unless something is wrong:
// it is large so that a loaded 2-core machine running -race never times
// out spuriously. testStall is what the stall mode of T17 waits, so it is
// small, and set only where a test needs it.
const (
	testTimeout = 30 * time.Second
	testStall   = 3 * time.Second
	testRetries = 3
)

// testOptions returns options with test timings and an empty environment.
func testOptions(w *warnings) Options {
	o := Options{
		Timeout:      testTimeout,
		StallTimeout: testTimeout,
		Retries:      testRetries,
		RetryDelay:   time.Millisecond,
		Env:          noEnv,
	}
	if w != nil {
		o.Warn = w.warn
	}
	return o
}

func newClient(t testing.TB, url string, o Options) *Client {
	t.Helper()
	if o.Warn == nil {
		o.Warn = func(msg string) { t.Errorf("unexpected warning: %s", msg) }
	}
	c, err := New(url, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// randomBlob returns n random bytes, the same for the same seed, and their
// digest.
func randomBlob(seed uint64, n int) ([]byte, cache.Digest) {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(n), byte(n >> 8), byte(n >> 16)}).Read(b)
	return b, cache.HashBytes(b)
}

// fetched is what the caller model saw of one OpenBlob.
type fetched struct {
	openErr  error  // from OpenBlob
	readErr  error  // from reading the body
	body     []byte // everything read
	accepted bool   // the caller's verdict
}

// fetch models the caller (remote.Tiered): it reads the whole blob, and
// accepts it only if nothing failed and the SHA-256 of everything read is
// the digest it asked for. Anything else is discarded: a miss.
func fetch(ctx context.Context, c remote.Backend, d cache.Digest) fetched {
	rc, err := c.OpenBlob(ctx, d)
	if err != nil {
		return fetched{openErr: err}
	}
	defer rc.Close()
	body, err := io.ReadAll(rc)
	f := fetched{body: body, readErr: err}
	f.accepted = err == nil && sha256.Sum256(body) == d
	return f
}

// staticBody returns an open func for b.
func staticBody(b []byte) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(bytesReader(b)), nil }
}

func bytesReader(b []byte) io.Reader { return &sliceReader{b: b} }

// sliceReader is bytes.Reader without WriteTo, so the transport reads it
// in chunks like a file.
type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// newHTTPServer starts h on loopback until the test ends and returns its
// URL.
func newHTTPServer(t testing.TB, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
