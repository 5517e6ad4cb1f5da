package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/cairn-run/cairn/cache"
)

// ErrUnavailable is what a [Backend] returns, wrapped, once it has found
// its server unreachable and stopped trying; it has warned the user
// itself, so [Tiered] does not warn again.
var ErrUnavailable = errors.New("server unreachable")

// Backend is a second cache level behind a local [cache.Dir]: a server
// speaking the Bazel HTTP cache protocol (package httpcache), or anything
// else that stores opaque bytes under a blob digest or an action key.
//
// Nothing a Backend returns is trusted. [Tiered] hash-verifies every blob
// before it is published locally and decodes, checks and (when required)
// checks the signature of every entry before it is used. Implementations
// must report a miss as an error wrapping [cache.ErrNotFound], and should
// keep their own timeouts and retries bounded.
type Backend interface {
	// OpenBlob starts reading the uncompressed content of blob d. The
	// returned reader must fail (not return io.EOF) if the body ends before
	// its announced length.
	OpenBlob(ctx context.Context, d cache.Digest) (io.ReadCloser, error)
	// HasBlob reports whether the server holds blob d.
	HasBlob(ctx context.Context, d cache.Digest) (bool, error)
	// PutBlob uploads blob d of the given size. open returns a fresh
	// reader of the content each time it is called, so an upload can be
	// retried; the reader fails if the local copy does not hash to d.
	PutBlob(ctx context.Context, d cache.Digest, size int64, open func() (io.ReadCloser, error)) error
	// GetEntry returns the stored bytes of the entry for key, as written
	// by [cache.EncodeEntry] (and signed, if signing is on).
	GetEntry(ctx context.Context, key cache.ActionID) ([]byte, error)
	// PutEntry uploads the stored bytes of the entry for key.
	PutEntry(ctx context.Context, key cache.ActionID, b []byte) error
	// String names the remote for messages, without credentials.
	String() string
}

// Options are what every backend is opened with.
type Options struct {
	// ReadOnly: the backend is only read from; it may refuse to write.
	ReadOnly bool
	// Insecure allows sending credentials over an unencrypted connection
	// to a host that is not loopback (the --remote-insecure flag).
	Insecure bool
	// Warn receives one-line warnings (the server became unreachable). It
	// must be safe for concurrent use.
	Warn func(msg string)
}

// Factory opens the backend for a URL of the scheme it was registered
// under. Its errors must not repeat user info, which may hold a password.
type Factory func(u *url.URL, o Options) (Backend, error)

var registry struct {
	sync.RWMutex
	byScheme map[string]Factory
}

// Register makes Open hand URLs of scheme (lower case, as url.Parse leaves
// it) to f. Registering a scheme twice panics: two backends for one URL
// would make the choice depend on the order of registration.
func Register(scheme string, f Factory) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.byScheme[scheme]; dup {
		panic("remote: scheme " + scheme + " registered twice")
	}
	if registry.byScheme == nil {
		registry.byScheme = map[string]Factory{}
	}
	registry.byScheme[scheme] = f
}

// Schemes returns the registered schemes, sorted.
func Schemes() []string {
	registry.RLock()
	defer registry.RUnlock()
	s := make([]string, 0, len(registry.byScheme))
	for k := range registry.byScheme {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// Open opens the backend registered for rawURL's scheme. Its errors never
// repeat the URL, which may hold a password: "user:pass@host" parses as
// scheme "user".
func Open(rawURL string, o Options) (Backend, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("remote cache URL: cannot parse it; %s", wantForms())
	}
	registry.RLock()
	f := registry.byScheme[u.Scheme]
	registry.RUnlock()
	if f == nil {
		return nil, fmt.Errorf("remote cache URL: only %s URLs are supported; %s", orList(Schemes(), "and"), wantForms())
	}
	return f(u, o)
}

// wantForms says what a remote URL looks like for each known scheme.
func wantForms() string {
	s := Schemes()
	for i, k := range s {
		s[i] = k + "://host[:port][/prefix]"
	}
	return "want " + orList(s, "or")
}

// orList joins "a", "a and b", "a, b and c".
func orList(s []string, conj string) string {
	switch len(s) {
	case 0:
		return "no"
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " " + conj + " " + s[len(s)-1]
}
