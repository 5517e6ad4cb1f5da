package httpcache

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/cache/remote"
)

var _ remote.Backend = (*Client)(nil)

// Defaults for the zero values of [Options].
const (
	DefaultTimeout      = 10 * time.Second
	DefaultStallTimeout = 30 * time.Second
	DefaultRetries      = 3
	DefaultRetryDelay   = 100 * time.Millisecond

	// MaxEntrySize bounds the body of an action entry: GetEntry refuses a
	// larger one rather than read it into memory.
	MaxEntrySize = 256 << 20

	maxRedirects = 5
	// maxRetryDelay caps the backoff before any one retry.
	maxRetryDelay = 2 * time.Second
	// maxTimeouts is how many attempts of one request may time out: a host
	// that drops packets costs at most this many Timeouts, once per process.
	maxTimeouts = 2
)

// Options configures a [Client]. The zero value is ready to use: 10 s
// timeout, 30 s stall timeout, 3 retries, credentials from the process
// environment, warnings to standard error.
type Options struct {
	// ReadOnly makes the client never send a PUT: PutBlob and PutEntry
	// return an error wrapping [ErrReadOnly] without contacting the server.
	ReadOnly bool
	// Insecure allows sending credentials over plain http to a host that is
	// not loopback (the --remote-insecure flag).
	Insecure bool

	// Timeout bounds connecting and waiting for the response headers of one
	// attempt (for a PUT: after the body was sent). Default 10 s.
	Timeout time.Duration
	// StallTimeout bounds how long a body may make no progress, in either
	// direction. Default 30 s.
	StallTimeout time.Duration
	// Retries is how many times a request is retried after a connection
	// error, a timeout, 429 or 5xx. Default 3; negative means none.
	Retries int
	// RetryDelay is the backoff before the first retry; it doubles for each
	// further retry (capped at 2 s) and is jittered. Default 100 ms.
	RetryDelay time.Duration

	// Header is a credential header "Name: value", used instead of
	// CAIRN_REMOTE_HEADER.
	Header string
	// Token is a bearer token, used instead of CAIRN_REMOTE_TOKEN.
	Token string

	// Warn receives the one-line warning printed when the server becomes
	// unavailable (and a netrc file that cannot be read). It must be safe
	// for concurrent use. Default: print the line to standard error.
	Warn func(msg string)
	// HTTPClient sends the requests (tests). Its CheckRedirect is replaced.
	// Default: a client whose transport never asks for compression.
	HTTPClient *http.Client
	// Env looks up environment variables (tests). Default os.Getenv.
	Env func(string) string
}

// Client talks to one remote cache server. Create it with [New]; it is safe
// for concurrent use by many goroutines.
type Client struct {
	base     *url.URL // scheme://host/path/, path ending in "/"
	name     string   // base as a string, for messages
	auth     credentials
	hc       *http.Client
	readOnly bool

	timeout    time.Duration
	stall      time.Duration
	retries    int
	retryDelay time.Duration
	maxEntry   int64 // MaxEntrySize; smaller in tests
	warn       func(string)

	// down is set once, by the first request whose connection-level
	// failure outlasted its retries; downCtx is cancelled at the same time
	// so requests waiting for headers give up.
	down     atomic.Pointer[error]
	downOnce sync.Once
	downCtx  context.Context
	setDown  context.CancelFunc

	stats struct {
		requests, retries, bytesDown, bytesUp, puts, misses atomic.Int64
	}
}

// New returns a client for the cache server at rawURL, an http or https
// URL whose path (if any) is the prefix under which ac/ and cas/ live.
//
// Credentials come from the first of: opts.Header, opts.Token, the
// environment variable CAIRN_REMOTE_HEADER ("Name: value", for example
// "Authorization: Bearer TOKEN"), CAIRN_REMOTE_TOKEN (sent as
// "Authorization: Bearer TOKEN"), and the "machine" entry for the URL's
// host in $NETRC or ~/.netrc (sent as Basic auth; a "default" entry is
// ignored, as by the go command, because it would hand the password to any
// host). New refuses a URL with user info or a query, and refuses to send
// credentials over plain http to a host that is not loopback unless
// opts.Insecure is set. Without credentials plain http is fine.
func New(rawURL string, opts Options) (*Client, error) {
	base, err := parseBase(rawURL)
	if err != nil {
		return nil, err
	}
	return clientFor(base, opts)
}

// Open is the [remote.Factory] of the http and https schemes: a client
// for u with the process's credentials and the default limits.
func Open(u *url.URL, o remote.Options) (remote.Backend, error) {
	v := *u
	base, err := checkBase(&v)
	if err != nil {
		return nil, err
	}
	return clientFor(base, Options{ReadOnly: o.ReadOnly, Insecure: o.Insecure, Warn: o.Warn})
}

func clientFor(base *url.URL, opts Options) (*Client, error) {
	env := opts.Env
	if env == nil {
		env = os.Getenv
	}
	warn := opts.Warn
	if warn == nil {
		warn = func(msg string) { fmt.Fprintln(os.Stderr, msg) }
	}
	c := &Client{
		base:       base,
		name:       base.String(),
		readOnly:   opts.ReadOnly,
		timeout:    orDefault(opts.Timeout, DefaultTimeout),
		stall:      orDefault(opts.StallTimeout, DefaultStallTimeout),
		retries:    opts.Retries,
		retryDelay: orDefault(opts.RetryDelay, DefaultRetryDelay),
		maxEntry:   MaxEntrySize,
		warn:       warn,
	}
	switch {
	case c.retries == 0:
		c.retries = DefaultRetries
	case c.retries < 0:
		c.retries = 0
	}
	c.downCtx, c.setDown = context.WithCancel(context.Background())

	var err error
	c.auth, err = loadCredentials(opts, env, opts.Env == nil, base.Hostname(), warn)
	if err != nil {
		return nil, fmt.Errorf("remote cache %s: %w", c.name, err)
	}
	if c.auth.source != "" && base.Scheme == "http" && !isLoopback(base.Hostname()) && !opts.Insecure {
		return nil, fmt.Errorf("remote cache %s: refusing to send credentials (from %s) over plain http to a host that is not loopback: use an https URL, or pass --remote-insecure if the network is trusted", c.name, c.auth.source)
	}

	if opts.HTTPClient != nil {
		hc := *opts.HTTPClient
		c.hc = &hc
	} else {
		c.hc = &http.Client{Transport: newTransport(c.timeout)}
	}
	c.hc.CheckRedirect = c.checkRedirect
	return c, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// parseBase checks rawURL and returns it with a path ending in "/". The
// errors never repeat user info, which may hold a password.
func parseBase(rawURL string) (*url.URL, error) {
	const want = "want http://host[:port][/prefix] or https://host[:port][/prefix]"
	u, err := url.Parse(rawURL)
	if err != nil {
		// Neither rawURL nor the parse error is printed: a mistyped
		// "http://user:pa/ss@host" puts part of a password in both.
		return nil, fmt.Errorf("remote cache URL: cannot parse it; %s", want)
	}
	return checkBase(u)
}

// checkBase checks a parsed URL as parseBase does and returns it with a
// path ending in "/".
func checkBase(u *url.URL) (*url.URL, error) {
	const want = "want http://host[:port][/prefix] or https://host[:port][/prefix]"
	if u.User != nil {
		u.User = nil
		return nil, fmt.Errorf("remote cache URL %s: user info (user:password@) is not allowed in the URL, where it would be printed and logged; set CAIRN_REMOTE_TOKEN or CAIRN_REMOTE_HEADER, or add a machine entry for %s to ~/.netrc", redactedURL(u), u.Hostname())
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Opaque != "" {
		// "user:pass@host" parses as scheme "user": print nothing of it.
		return nil, fmt.Errorf("remote cache URL: only http and https URLs are supported; %s", want)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("remote cache URL %s: no host; %s", redactedURL(u), want)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("remote cache URL %s: a query or fragment is not allowed (it may hold a secret, and would be printed); pass credentials in CAIRN_REMOTE_TOKEN or CAIRN_REMOTE_HEADER", redactedURL(u))
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		if u.RawPath != "" {
			u.RawPath += "/"
		}
	}
	return u, nil
}

// redactedURL prints u without user info, query or fragment.
func redactedURL(u *url.URL) string {
	v := *u
	v.User, v.RawQuery, v.ForceQuery, v.Fragment, v.RawFragment = nil, "", false, "", ""
	return v.String()
}

// isLoopback reports whether host (without port) is this machine, judged
// from its spelling alone: "localhost" or a loopback IP literal.
func isLoopback(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newTransport(timeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: timeout,
		// Response headers are bounded per attempt by the client's own
		// timer, which also covers a caller's HTTPClient.
		DisableCompression:  true, // a blob is its raw bytes; never gunzip behind our back
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
	}
}

// checkRedirect follows a redirect only to the same scheme and host
// (host:port) and at most maxRedirects times. Anything else stops with the
// redirect response itself, which the request loop reports as an error: a
// miss for the caller, and no credential ever reaches another host.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects || req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
		return http.ErrUseLastResponse
	}
	return nil
}

// String returns the base URL, without credentials: scheme://host/prefix/.
func (c *Client) String() string { return c.name }

// ReadOnly reports whether the client was created with [Options.ReadOnly]:
// then it never uploads, so callers may skip preparing uploads at all.
func (c *Client) ReadOnly() bool { return c.readOnly }

// AuthSource names where the credentials came from ("CAIRN_REMOTE_TOKEN",
// "netrc /home/me/.netrc", ...), or "" if none are sent. It never returns
// the credentials themselves.
func (c *Client) AuthSource() string { return c.auth.source }

// Stats are counters since the client was created, for reports.
type Stats struct {
	Requests  int64 // HTTP requests sent, retries and HEADs included
	Retries   int64 // requests that were retries of an earlier attempt
	BytesDown int64 // body bytes received and handed to callers
	BytesUp   int64 // body bytes sent by PUTs, retried attempts included
	Puts      int64 // PUTs the server accepted
	Misses    int64 // GETs and HEADs answered 404
	Down      bool  // the server was found unreachable; calls fail at once
}

// Stats returns the current counters. It is safe to call at any time.
func (c *Client) Stats() Stats {
	return Stats{
		Requests:  c.stats.requests.Load(),
		Retries:   c.stats.retries.Load(),
		BytesDown: c.stats.bytesDown.Load(),
		BytesUp:   c.stats.bytesUp.Load(),
		Puts:      c.stats.puts.Load(),
		Misses:    c.stats.misses.Load(),
		Down:      c.down.Load() != nil,
	}
}

// GoString keeps %#v from printing the credentials.
func (c *Client) GoString() string { return "remote.Client(" + c.name + ")" }

// String prints o with Header and Token redacted, so that logging the
// options does not log the credentials.
func (o Options) String() string {
	type plain Options // without methods, so no recursion
	p := plain(o)
	if p.Header != "" {
		p.Header = "[REDACTED]"
	}
	if p.Token != "" {
		p.Token = "[REDACTED]"
	}
	return fmt.Sprintf("%+v", p)
}

// GoString is String, for %#v.
func (o Options) GoString() string { return "remote.Options" + o.String() }
