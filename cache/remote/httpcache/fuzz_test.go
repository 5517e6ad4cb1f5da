package httpcache

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/google/go-cmp/cmp"
)

// FuzzNetrc checks that the netrc parser never panics, that what it parses
// survives being written back (quoted) and parsed again, and that lookup
// returns the first machine entry for a host and never the default. Seeds
// are in testdata/fuzz/FuzzNetrc.
func FuzzNetrc(f *testing.F) {
	f.Fuzz(func(t *testing.T, data string) {
		n := parseNetrc(data)
		again := parseNetrc(formatNetrc(n))
		if diff := cmp.Diff(n, again); diff != "" {
			t.Fatalf("parse(format(parse(%q))) differs (-first +second):\n%s\nformatted:\n%s", data, diff, formatNetrc(n))
		}
		for _, e := range n {
			if e.Default {
				continue
			}
			got, ok := n.lookup(e.Machine)
			if !ok || got.Default || !strings.EqualFold(got.Machine, e.Machine) {
				t.Fatalf("lookup(%q) = %+v, %v", e.Machine, got, ok)
			}
		}
	})
}

// fuzzBlob is the blob the caller model asks for in FuzzRemoteResponse.
var fuzzBlob = []byte("the blob the caller asked for\n")

// FuzzRemoteResponse feeds the client arbitrary answers (status, headers,
// body, announced length) from a fake transport, for every operation.
// Whatever the answer: no panic; the caller model accepts only bytes that
// hash to the digest; a non-2xx answer is never success; 404 is a miss;
// a reader that ends cleanly has delivered exactly the announced length;
// GetEntry returns at most the size limit; and the credentials, which the
// fake server echoes back wherever "$AUTH" appears, never reach an error.
// Seeds (one per T17-like answer) are in testdata/fuzz/FuzzRemoteResponse.
func FuzzRemoteResponse(f *testing.F) {
	const token = "fuzzcanary0123456789abcdef"
	f.Fuzz(func(t *testing.T, status uint16, header string, body []byte, lenDelta int8, op byte) {
		code := 100 + int(status)%500
		var (
			hdr       http.Header
			served    []byte // the body sent, "$AUTH" replaced
			announced int64  // its Content-Length, -1 for none
		)
		transport := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Body != nil {
				io.Copy(io.Discard, req.Body)
				req.Body.Close()
			}
			echo := req.Header.Get("Authorization")
			hdr = http.Header{}
			for line := range strings.Lines(header) {
				k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
				if ok && validHeaderName(k) {
					hdr.Add(k, strings.ReplaceAll(strings.TrimSpace(v), "$AUTH", echo))
				}
			}
			served = bytes.ReplaceAll(body, []byte("$AUTH"), []byte(echo))
			announced = -1
			if lenDelta >= 0 {
				announced = max(0, int64(len(served))+int64(lenDelta%5)-2)
			}
			return &http.Response{StatusCode: code, Header: hdr, ContentLength: announced,
				Body: io.NopCloser(&chunkReader{b: served, step: 1 + int(op)%7}), Request: req}, nil
		})
		c, err := New("https://cache.example.com/prefix/", Options{
			Token: token, Env: noEnv, Retries: 1, RetryDelay: time.Nanosecond,
			Timeout: time.Minute, StallTimeout: time.Minute,
			HTTPClient: &http.Client{Transport: transport}, Warn: func(msg string) {
				if strings.Contains(msg, token) {
					t.Errorf("warning shows the token: %s", msg)
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		c.maxEntry = 64
		noLeak := func(err error) {
			for _, e := range errorChain(err) {
				if strings.Contains(e.Error(), token) {
					t.Fatalf("error shows the token: %v", e)
				}
			}
		}
		ok2xx := code/100 == 2
		d := cache.HashBytes(fuzzBlob)

		switch op % 5 {
		case 0, 1: // the caller model: OpenBlob, read all, hash
			rc, err := c.OpenBlob(t.Context(), d)
			noLeak(err)
			if err != nil {
				if code == http.StatusNotFound && !errors.Is(err, cache.ErrNotFound) {
					t.Fatalf("404: error %v does not wrap ErrNotFound", err)
				}
				return
			}
			if !ok2xx {
				t.Fatalf("status %d: OpenBlob succeeded", code)
			}
			if ce := hdr.Get("Content-Encoding"); ce != "" && ce != "identity" {
				t.Fatalf("Content-Encoding %q accepted", ce)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			noLeak(err)
			if err == nil && announced >= 0 && int64(len(got)) != announced {
				t.Fatalf("clean EOF after %d bytes, %d announced", len(got), announced)
			}
			if accepted := err == nil && cache.HashBytes(got) == d; accepted && !bytes.Equal(got, fuzzBlob) {
				t.Fatalf("accepted %q", got) // cannot happen short of a SHA-256 collision
			}
		case 2:
			b, err := c.GetEntry(t.Context(), cache.ActionID(d))
			noLeak(err)
			if err != nil {
				if code == http.StatusNotFound && !errors.Is(err, cache.ErrNotFound) {
					t.Fatalf("404: error %v does not wrap ErrNotFound", err)
				}
				return
			}
			if !ok2xx {
				t.Fatalf("status %d: GetEntry succeeded", code)
			}
			if int64(len(b)) > c.maxEntry {
				t.Fatalf("GetEntry returned %d bytes, limit %d", len(b), c.maxEntry)
			}
			if announced >= 0 && int64(len(b)) != announced || !bytes.Equal(b, served) {
				t.Fatalf("GetEntry = %q, server sent %q announcing %d", b, served, announced)
			}
		case 3:
			noLeak(c.PutBlob(t.Context(), d, int64(len(fuzzBlob)), staticBody(fuzzBlob)))
		case 4:
			ok, err := c.HasBlob(t.Context(), d)
			noLeak(err)
			if ok && !ok2xx || err == nil && !ok && code != http.StatusNotFound {
				t.Fatalf("status %d: HasBlob = %v, %v", code, ok, err)
			}
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// chunkReader returns at most step bytes per Read.
type chunkReader struct {
	b    []byte
	step int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.step)], r.b)
	r.b = r.b[n:]
	return n, nil
}
