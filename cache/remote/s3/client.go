package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-run/cairn/cache/remote"
)

// Sizes and bounds.
const (
	// PartSize is the size of one part of a multipart upload and of one
	// ranged GET of a large download.
	PartSize = 8 << 20
	// multipartAbove is the size above which a blob is uploaded in parts;
	// below it one streamed PUT is cheaper.
	multipartAbove = 2 * PartSize
	// DefaultTransfers bounds the parts (and small objects) in flight in
	// the whole process, and with PartSize the memory they hold.
	DefaultTransfers = 8
	// MaxBuffers bounds the part buffers in the process (MaxBuffers x
	// PartSize bytes), within the bound on transfers.
	MaxBuffers = 4
	// readAhead is how many parts one download fetches ahead of its reader.
	readAhead = 4
	// MaxEntrySize bounds the body of an action entry.
	MaxEntrySize = 256 << 20
	// touchAfter is how old an entry's LastModified must be before a hit
	// renews it: use is recorded at most once a day per entry.
	touchAfter = 24 * time.Hour
)

// ErrReadOnly is returned by PutBlob and PutEntry of a read-only client.
var ErrReadOnly = errors.New("remote cache is read-only")

// Options configures a [Client]. The zero value is ready to use.
type Options struct {
	// ReadOnly: never write to the bucket (no uploads, no use marks).
	ReadOnly bool
	// PathStyle forces path-style URLs (endpoint/bucket/key) instead of
	// virtual-hosted ones (bucket.endpoint/key). Also set by
	// CAIRN_S3_PATH_STYLE=1 or ?path_style=true in the URL.
	PathStyle bool
	// Transfers bounds the transfers in flight in the process (the first
	// client created sets it). Default DefaultTransfers.
	Transfers int
	// Retries after a throttled or failed request. Default 4.
	Retries int
	// RetryDelay is the first backoff; it doubles per retry, capped at
	// 5 s, jittered. Default 200 ms.
	RetryDelay time.Duration
	// Env looks up environment variables (tests). Default os.Getenv.
	Env func(string) string
	// HTTPClient sends the requests (tests). Default: the SDK's, with
	// more idle connections per host.
	HTTPClient interface {
		Do(*http.Request) (*http.Response, error)
	}
	// Now is the clock for use marks and GC (tests). Default time.Now.
	Now func() time.Time
}

// Client is one bucket and prefix. It is safe for concurrent use.
type Client struct {
	api      *awss3.Client // set by ready
	load     func() error
	loadOnce sync.Once
	loadErr  error
	bucket   string
	prefix   string // "" or ending in "/"
	name     string // s3://bucket/prefix/, for messages
	readOnly bool

	retries    int
	retryDelay time.Duration
	now        func() time.Time

	// condOff is set once the store refused If-None-Match on a PUT; the
	// client then writes without it (the bytes under a key never differ
	// in meaning, so a second writer only repeats the first).
	condOff atomic.Bool
}

var (
	slotsOnce sync.Once
	slots     chan struct{} // the process-wide bound on transfers
	// bufs holds the part buffers, made on first need and reused: their
	// number, not the blobs' sizes, bounds the memory transfers hold.
	bufs     = make(chan *[]byte, MaxBuffers)
	bufsMade atomic.Int32
)

func initSlots(n int) {
	slotsOnce.Do(func() {
		if n <= 0 {
			n = DefaultTransfers
		}
		slots = make(chan struct{}, n)
	})
}

// acquire takes a transfer slot, or fails when ctx ends first.
func acquire(ctx context.Context) error {
	select {
	case slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func release() { <-slots }

// getBuf returns a part buffer, waiting for one to be free if MaxBuffers
// are in use.
func getBuf(ctx context.Context) (*[]byte, error) {
	select {
	case b := <-bufs:
		return b, nil
	default:
	}
	if bufsMade.Add(1) <= MaxBuffers {
		b := make([]byte, PartSize)
		return &b, nil
	}
	bufsMade.Add(-1)
	select {
	case b := <-bufs:
		return b, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func putBuf(b *[]byte) { bufs <- b }

// Open is the [remote.Factory] for s3 URLs.
func Open(u *url.URL, o remote.Options) (remote.Backend, error) {
	return New(context.Background(), u.String(), Options{ReadOnly: o.ReadOnly})
}

// New returns a client for rawURL, s3://bucket[/prefix][?path_style=true].
// AWS configuration (credentials, region, endpoint) is loaded from the
// standard places; a missing region defaults to us-east-1, which is what
// S3-compatible stores expect.
func New(ctx context.Context, rawURL string, o Options) (*Client, error) {
	env := o.Env
	if env == nil {
		env = os.Getenv
	}
	bucket, prefix, pathStyle, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if b, err := strconv.ParseBool(env("CAIRN_S3_PATH_STYLE")); err == nil && b {
		pathStyle = true
	}
	name := "s3://" + bucket + "/" + prefix
	var hc config.HTTPClient
	if o.HTTPClient != nil {
		hc = o.HTTPClient
	}
	initSlots(o.Transfers)
	c := &Client{
		bucket: bucket, prefix: prefix, name: name, readOnly: o.ReadOnly,
		retries: o.Retries, retryDelay: o.RetryDelay, now: o.Now,
	}
	// The AWS configuration is loaded on first use: a run whose phases
	// all hit the local cache never asks the remote anything.
	c.load = func() error {
		if hc == nil {
			hc = defaultHTTPClient()
		}
		cfg, err := config.LoadDefaultConfig(ctx,
			config.WithHTTPClient(hc),
			config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }), // retries are ours: Retry-After, local bodies
			config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
			config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
		)
		if err != nil {
			// The SDK's message names the file or setting that failed, never a secret.
			return fmt.Errorf("load AWS configuration: %w", err)
		}
		if cfg.Region == "" {
			cfg.Region = "us-east-1"
		}
		cfg.ClientLogMode = 0 // nothing of a request is ever logged
		c.api = awss3.NewFromConfig(cfg, func(so *awss3.Options) {
			so.UsePathStyle = pathStyle || endpointNeedsPathStyle(so.BaseEndpoint)
			so.DisableLogOutputChecksumValidationSkipped = true
		})
		return nil
	}
	switch {
	case c.retries == 0:
		c.retries = 4
	case c.retries < 0:
		c.retries = 0
	}
	if c.retryDelay <= 0 {
		c.retryDelay = 200 * time.Millisecond
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// parseURL splits s3://bucket/prefix?path_style=true. It refuses user info
// and any other query parameter: credentials never belong in the URL.
func parseURL(rawURL string) (bucket, prefix string, pathStyle bool, err error) {
	const want = "want s3://bucket[/prefix][?path_style=true]"
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", false, fmt.Errorf("remote cache URL: cannot parse it; %s", want)
	}
	if u.Scheme != "s3" {
		return "", "", false, fmt.Errorf("remote cache URL: not an s3 URL; %s", want)
	}
	if u.User != nil {
		return "", "", false, fmt.Errorf("remote cache URL s3://%s/...: user info is not allowed in the URL; credentials come from the AWS chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, instance roles)", u.Hostname())
	}
	bucket = u.Host
	if bucket == "" {
		return "", "", false, fmt.Errorf("remote cache URL: no bucket; %s", want)
	}
	for k, v := range u.Query() {
		if k != "path_style" || len(v) != 1 {
			return "", "", false, fmt.Errorf("remote cache URL s3://%s: unknown query parameter %q; the only one is path_style=true (credentials come from the AWS chain, the endpoint from AWS_ENDPOINT_URL_S3)", bucket, k)
		}
		pathStyle, err = strconv.ParseBool(v[0])
		if err != nil {
			return "", "", false, fmt.Errorf("remote cache URL s3://%s: path_style=%q: want true or false", bucket, v[0])
		}
	}
	if u.Fragment != "" {
		return "", "", false, fmt.Errorf("remote cache URL s3://%s: a fragment is not allowed; %s", bucket, want)
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	return bucket, prefix, pathStyle, nil
}

// endpointNeedsPathStyle: a virtual-hosted URL needs a DNS name under the
// endpoint, which an IP address or localhost cannot have.
func endpointNeedsPathStyle(endpoint *string) bool {
	if endpoint == nil {
		return false
	}
	u, err := url.Parse(*endpoint)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return net.ParseIP(h) != nil || strings.EqualFold(h, "localhost")
}

func defaultHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = 128
		t.MaxIdleConnsPerHost = 64
		t.DisableCompression = true
		// The response to a request whose body was sent must start within
		// this; the caller's deadline bounds the rest.
		t.ResponseHeaderTimeout = 60 * time.Second
	}).WithDialerOptions(func(d *net.Dialer) { d.Timeout = 10 * time.Second })
}

// String returns s3://bucket/prefix/.
func (c *Client) String() string { return c.name }

// GoString keeps %#v short.
func (c *Client) GoString() string { return "s3.Client(" + c.name + ")" }

// ReadOnly reports whether the client never writes.
func (c *Client) ReadOnly() bool { return c.readOnly }

// ready loads the AWS configuration once; every operation starts with it.
func (c *Client) ready() error {
	c.loadOnce.Do(func() { c.loadErr = c.load() })
	return c.loadErr
}

func (c *Client) key(kind, hex string) string { return c.prefix + kind + "/" + hex }
