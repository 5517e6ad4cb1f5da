package httpcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote/remotetest"
	"github.com/google/go-cmp/cmp"
)

func TestNewURL(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		url     string
		want    string // String(), if New succeeds
		wantErr string // substring of the error, if it fails
	}{
		"plain":            {url: "http://cache.lab:9090", want: "http://cache.lab:9090/"},
		"prefix":           {url: "http://host:8080/team", want: "http://host:8080/team/"},
		"prefix slash":     {url: "https://host/team/", want: "https://host/team/"},
		"ipv6":             {url: "http://[::1]:8181/", want: "http://[::1]:8181/"},
		"user info":        {url: "https://bob:hunter2secret@host/", wantErr: "set CAIRN_REMOTE_TOKEN or CAIRN_REMOTE_HEADER, or add a machine entry for host to ~/.netrc"},
		"user only":        {url: "https://tokentokentoken@host/", wantErr: "user info"},
		"query":            {url: "https://host/?token=hunter2secret", wantErr: "a query or fragment is not allowed"},
		"fragment":         {url: "https://host/#hunter2secret", wantErr: "a query or fragment is not allowed"},
		"no scheme":        {url: "bob:hunter2secret@host", wantErr: "only http and https URLs are supported"},
		"ftp":              {url: "ftp://host/", wantErr: "only http and https URLs are supported"},
		"no host":          {url: "http:///cache", wantErr: "no host"},
		"unparseable":      {url: "http://bob:hunter2/secret@host:x/", wantErr: "cannot parse it"},
		"control":          {url: "http://host/\x7fhunter2secret", wantErr: "cannot parse it"},
		"empty":            {url: "", wantErr: "only http and https"},
		"opaque":           {url: "http:hunter2secret", wantErr: "only http and https"},
		"space in host":    {url: "http://ho st/", wantErr: "cannot parse it"},
		"https no creds":   {url: "https://cache.example.com/", want: "https://cache.example.com/"},
		"path with spaces": {url: "http://host/a%20b/", want: "http://host/a%20b/"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := New(tt.url, testOptions(nil))
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("New(%q) = %v, want an error containing %q", tt.url, c, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("New(%q) error = %q, want it to contain %q", tt.url, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "tokentokentoken") {
					t.Errorf("New(%q) error %q repeats the credentials", tt.url, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%q): %v", tt.url, err)
			}
			if got := c.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRoundTrip puts, heads and gets blobs and entries through a prefix,
// with nginx-style (201/204) and bazel-remote-style (200) PUT answers.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for name, putStatus := range map[string]int{"nginx": 0, "bazel-remote": http.StatusOK} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := remotetest.New(t, remotetest.Options{Prefix: "/team/", PutStatus: putStatus, VerifyCAS: true})
			c := newClient(t, srv.URL, testOptions(nil))
			ctx := t.Context()
			blob, d := randomBlob(1, 100_000)
			var key cache.ActionID
			copy(key[:], bytes.Repeat([]byte{7}, 32))
			entry := []byte("cairn-ac 1\nopaque entry bytes\n")

			if ok, err := c.HasBlob(ctx, d); ok || err != nil {
				t.Errorf("HasBlob before put = %v, %v; want false, nil", ok, err)
			}
			if f := fetch(ctx, c, d); !errors.Is(f.openErr, cache.ErrNotFound) {
				t.Errorf("OpenBlob before put: %v, want ErrNotFound", f.openErr)
			}
			if _, err := c.GetEntry(ctx, key); !errors.Is(err, cache.ErrNotFound) {
				t.Errorf("GetEntry before put: %v, want ErrNotFound", err)
			}
			for range 2 { // the second PUT finds the object present (204)
				if err := c.PutBlob(ctx, d, int64(len(blob)), staticBody(blob)); err != nil {
					t.Fatal(err)
				}
				if err := c.PutEntry(ctx, key, entry); err != nil {
					t.Fatal(err)
				}
			}
			if ok, err := c.HasBlob(ctx, d); !ok || err != nil {
				t.Errorf("HasBlob after put = %v, %v; want true, nil", ok, err)
			}
			if f := fetch(ctx, c, d); !f.accepted {
				t.Errorf("OpenBlob after put: %+v, want the blob", f.openErr)
			}
			got, err := c.GetEntry(ctx, key)
			if err != nil || !bytes.Equal(got, entry) {
				t.Errorf("GetEntry = %q, %v; want %q", got, err, entry)
			}
			if _, ok := srv.Object("cas/" + d.String()); !ok {
				t.Errorf("server has no cas/%s", d)
			}

			// The empty blob: a PUT with Content-Length 0, read back empty.
			empty := cache.HashBytes(nil)
			if err := c.PutBlob(ctx, empty, 0, staticBody(nil)); err != nil {
				t.Fatal(err)
			}
			if f := fetch(ctx, c, empty); !f.accepted || len(f.body) != 0 {
				t.Errorf("empty blob: %+v", f)
			}

			st := c.Stats()
			want := Stats{Requests: 12, Puts: 5, Misses: 3, BytesUp: 2 * int64(len(blob)+len(entry)), BytesDown: int64(len(blob) + len(entry))}
			if diff := cmp.Diff(want, st); diff != "" {
				t.Errorf("Stats (-want +got):\n%s", diff)
			}
			for _, r := range srv.Requests() {
				if ae := r.Header.Get("Accept-Encoding"); ae != "identity" {
					t.Errorf("%s %s sent Accept-Encoding %q, want identity", r.Method, r.Path, ae)
				}
			}
		})
	}
}

// TestAnswers checks how each kind of answer is reported and retried.
func TestAnswers(t *testing.T) {
	t.Parallel()
	blob, d := randomBlob(2, 1000)
	tests := map[string]struct {
		codes       []int // answers to the first requests; then the blob (200)
		wantErr     string
		notFound    bool
		wantReqs    int
		wantRetries int64
	}{
		"200":             {codes: nil, wantReqs: 1},
		"404 miss":        {codes: []int{404}, notFound: true, wantErr: "not found", wantReqs: 1},
		"403 no retry":    {codes: []int{403}, wantErr: "server answered 403 Forbidden: denied 403", wantReqs: 1},
		"400 no retry":    {codes: []int{400}, wantErr: "400 Bad Request", wantReqs: 1},
		"503 then ok":     {codes: []int{503}, wantReqs: 2, wantRetries: 1},
		"429 then ok":     {codes: []int{429, 429}, wantReqs: 3, wantRetries: 2},
		"500s then ok":    {codes: []int{500, 502, 504}, wantReqs: 4, wantRetries: 3},
		"503 exhausted":   {codes: []int{503, 503, 503, 503}, wantErr: "server answered 503 Service Unavailable: denied 503", wantReqs: 4, wantRetries: 3},
		"304 not allowed": {codes: []int{304}, wantErr: "304 Not Modified", wantReqs: 1},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				if i < len(tt.codes) {
					http.Error(w, fmt.Sprintf("denied %d\nsecond line", tt.codes[i]), tt.codes[i])
					return
				}
				w.Write(blob)
			}))
			defer srv.Close()
			c := newClient(t, srv.URL, testOptions(nil))
			f := fetch(t.Context(), c, d)
			if tt.wantErr == "" {
				if !f.accepted {
					t.Errorf("fetch: %v %v, want the blob", f.openErr, f.readErr)
				}
			} else {
				if f.openErr == nil || !strings.Contains(f.openErr.Error(), tt.wantErr) {
					t.Errorf("OpenBlob error = %v, want it to contain %q", f.openErr, tt.wantErr)
				}
				if got := errors.Is(f.openErr, cache.ErrNotFound); got != tt.notFound {
					t.Errorf("errors.Is(%v, ErrNotFound) = %v, want %v", f.openErr, got, tt.notFound)
				}
				if errors.Is(f.openErr, ErrUnavailable) {
					t.Errorf("a server that answers is not unavailable: %v", f.openErr)
				}
			}
			if got := int(n.Load()); got != tt.wantReqs {
				t.Errorf("server got %d requests, want %d", got, tt.wantReqs)
			}
			if got := c.Stats().Retries; got != tt.wantRetries {
				t.Errorf("Stats().Retries = %d, want %d", got, tt.wantRetries)
			}
		})
	}
}

// TestPutLocalFailure checks that a failing local copy aborts the upload
// before the server has every byte, is reported, and is not retried.
func TestPutLocalFailure(t *testing.T) {
	t.Parallel()
	blob, d := randomBlob(3, 300_000)
	errCorrupt := errors.New("local copy does not hash to its digest")
	tests := map[string]struct {
		open    func() (io.ReadCloser, error)
		size    int64
		wantErr string
	}{
		"open fails": {
			open:    func() (io.ReadCloser, error) { return nil, errCorrupt },
			size:    int64(len(blob)),
			wantErr: "open local copy: local copy does not hash",
		},
		"fails at EOF": {
			open: func() (io.ReadCloser, error) {
				return io.NopCloser(io.MultiReader(bytesReader(blob), errReader{errCorrupt})), nil
			},
			size:    int64(len(blob)),
			wantErr: "read local copy: local copy does not hash",
		},
		"short": {
			open:    staticBody(blob[:1000]),
			size:    int64(len(blob)),
			wantErr: "local copy ended after 1000 of 300000 bytes",
		},
		"long": {
			open:    staticBody(blob),
			size:    1000,
			wantErr: "local copy is longer than its size 1000",
		},
		"long by one": {
			open:    staticBody(blob[:1001]),
			size:    1000,
			wantErr: "local copy is longer than its size 1000",
		},
		"empty not empty": {
			open:    staticBody([]byte("x")),
			size:    0,
			wantErr: "local copy is longer than its size 0",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := remotetest.New(t, remotetest.Options{})
			c := newClient(t, srv.URL, testOptions(nil))
			err := c.PutBlob(t.Context(), d, tt.size, tt.open)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("PutBlob error = %v, want it to contain %q", err, tt.wantErr)
			}
			if got := c.Stats().Retries; got != 0 {
				t.Errorf("retried %d times, want 0", got)
			}
			if objs := srv.Objects(); len(objs) != 0 {
				t.Errorf("server stored %d objects, want 0", len(objs))
			}
		})
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// TestEntryLimit checks that GetEntry refuses bodies over the limit,
// announced or not.
func TestEntryLimit(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("e"), 2000)
	for name, chunked := range map[string]bool{"content-length": false, "chunked": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !chunked {
					w.Header().Set("Content-Length", fmt.Sprint(len(big)))
				}
				w.Write(big)
			}))
			defer srv.Close()
			c := newClient(t, srv.URL, testOptions(nil))
			c.maxEntry = 1000
			b, err := c.GetEntry(t.Context(), cache.ActionID{1})
			if err == nil || !strings.Contains(err.Error(), "more than the 1000 bytes an entry may have") {
				t.Errorf("GetEntry = %d bytes, %v; want the limit error", len(b), err)
			}
			c.maxEntry = 2000
			if b, err := c.GetEntry(t.Context(), cache.ActionID{1}); err != nil || len(b) != 2000 {
				t.Errorf("GetEntry at the limit = %d bytes, %v; want 2000, nil", len(b), err)
			}
		})
	}
}

// TestCancel checks that a cancelled context ends a request without
// retries and without taking the client down.
func TestCancel(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-block:
		}
	}))
	defer srv.Close()
	defer close(block)
	c := newClient(t, srv.URL, testOptions(nil))
	ctx, cancel := context.WithCancel(t.Context())
	go cancel()
	_, err := c.OpenBlob(ctx, cache.Digest{1})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("OpenBlob error = %v, want context.Canceled", err)
	}
	if st := c.Stats(); st.Down || st.Retries != 0 {
		t.Errorf("Stats = %+v, want not down, no retries", st)
	}
}

// TestReadOnly is T18(d): a read-only client reads but never sends a PUT.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	srv := remotetest.New(t, remotetest.Options{})
	blob, d := randomBlob(4, 5000)
	srv.Set("cas/"+d.String(), blob)
	o := testOptions(nil)
	o.ReadOnly = true
	c := newClient(t, srv.URL, o)
	if f := fetch(t.Context(), c, d); !f.accepted {
		t.Errorf("fetch: %v %v, want the blob", f.openErr, f.readErr)
	}
	errs := []error{
		c.PutBlob(t.Context(), d, int64(len(blob)), staticBody(blob)),
		c.PutBlob(t.Context(), cache.HashBytes(nil), 0, staticBody(nil)),
		c.PutEntry(t.Context(), cache.ActionID{1}, []byte("entry")),
	}
	for i, err := range errs {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("put %d: error = %v, want ErrReadOnly", i, err)
		}
	}
	if n := srv.Count(http.MethodPut); n != 0 {
		t.Errorf("server saw %d PUTs, want 0", n)
	}
	t.Logf("T18(d) read-only: PUTs observed by the server: %d", srv.Count(http.MethodPut))
}

// TestPutLocalStall checks that an upload whose local reader hangs (a hung
// disk) ends after the stall timeout, is not retried, does not mark the
// server down, and has its reader closed.
func TestPutLocalStall(t *testing.T) {
	t.Parallel()
	for name, afterBytes := range map[string]int{"at once": 0, "midway": 100_000} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := remotetest.New(t, remotetest.Options{})
			o := testOptions(nil)
			o.Timeout, o.StallTimeout = 500*time.Millisecond, 500*time.Millisecond
			c := newClient(t, srv.URL, o)
			blob, d := randomBlob(5, 200_000)
			hung := &hungReader{r: bytesReader(blob[:afterBytes]), closed: make(chan struct{})}
			err := c.PutBlob(t.Context(), d, int64(len(blob)), func() (io.ReadCloser, error) { return hung, nil })
			if err == nil || !strings.Contains(err.Error(), "read local copy: stuck") {
				t.Errorf("PutBlob = %v, want a stuck local copy", err)
			}
			select {
			case <-hung.closed:
			default:
				t.Errorf("the hung reader was not closed before PutBlob returned")
			}
			if st := c.Stats(); st.Down || st.Retries != 0 {
				t.Errorf("Stats = %+v, want not down, no retries", st)
			}
		})
	}
}

// hungReader yields r, then blocks until closed.
type hungReader struct {
	r      io.Reader
	once   sync.Once
	closed chan struct{}
}

func (h *hungReader) Read(p []byte) (int, error) {
	if n, err := h.r.Read(p); n > 0 || err != io.EOF {
		return n, err
	}
	<-h.closed
	return 0, errors.New("read after close")
}

func (h *hungReader) Close() error {
	h.once.Do(func() { close(h.closed) })
	return nil
}
