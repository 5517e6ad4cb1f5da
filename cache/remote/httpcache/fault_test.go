package httpcache

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote/remotetest"
	"github.com/google/go-cmp/cmp"
)

// Outcomes of one fetch in TestFaultModes.
const (
	accepted       = "accepted"             // the right bytes, hash verified
	clientError    = "client error on open" // OpenBlob failed: a miss
	readError      = "client error on read" // the reader failed: discarded
	hashMismatch   = "caller hash mismatch" // read cleanly, wrong bytes: the caller discards them
	acceptedBadBug = "BAD BYTES ACCEPTED"   // never: the caller model makes it impossible, the test proves the model is applied
)

// TestFaultModes is T17: each fault mode of the H6 server, fetched through
// the client and verified as the caller does. Nothing that fails the hash
// is accepted, every fetch ends within the timeout and retries, transient
// 5xx answers are retried to success, and no credential reaches another
// host.
func TestFaultModes(t *testing.T) {
	t.Parallel()
	const canary = "canary-0b7e4f1a9c2d4e6f8a1b3c5d7e9f0a2b"
	blob, d := randomBlob(17, 256<<10)
	// Each broken mode is the server's default, so a retry (there should
	// be none, but a starved CI machine may time out) meets it again; the
	// 5xx modes are queued before a default of OK.
	const O = remotetest.OK
	tests := []struct {
		name        string
		mode        remotetest.Mode   // every GET not covered by queue
		queue       []remotetest.Mode // the first GETs
		want        string
		wantRetries int64 // at least
	}{
		{"0 ok", O, nil, accepted, 0},
		{"1 cut with Content-Length", remotetest.CutWithLength, nil, readError, 0},
		{"2 cut, close-delimited (clean EOF)", remotetest.CutCleanEOF, nil, hashMismatch, 0},
		{"2b cut, chunked", remotetest.CutChunked, nil, readError, 0},
		{"3 same length, wrong bytes", remotetest.WrongBytes, nil, hashMismatch, 0},
		{"4 trailing bytes, close-delimited", remotetest.TrailingBytes, nil, hashMismatch, 0},
		{"4b trailing bytes inside Content-Length", remotetest.TrailingInLength, nil, hashMismatch, 0},
		{"4c trailing bytes beyond Content-Length", remotetest.TrailingBeyondLength, nil, accepted, 0},
		{"5 503 then ok", O, []remotetest.Mode{remotetest.Status503}, accepted, 1},
		{"5 503, 500 then ok", O, []remotetest.Mode{remotetest.Status503, remotetest.Status500}, accepted, 2},
		{"5 503 x4: retries exhausted", O, []remotetest.Mode{remotetest.Status503, remotetest.Status503, remotetest.Status503, remotetest.Status503}, clientError, 3},
		{"6 stall mid-body", remotetest.Stall, nil, readError, 0},
		{"7 200 with an HTML page", remotetest.HTMLPage, nil, hashMismatch, 0},
		{"8 truncated gzip", remotetest.TruncatedGzip, nil, clientError, 0},
		{"9 redirect to another host", remotetest.RedirectOther, nil, clientError, 0},
		{"9b redirect to the same host", remotetest.RedirectSame, nil, accepted, 0},
		{"10 a different valid blob", remotetest.OtherBlob, nil, hashMismatch, 0},
	}

	type row struct {
		Outcome    string
		MinRetries bool // at least the retries wanted
	}
	type result struct {
		row
		retries  int64
		wall     time.Duration
		msg      string
		badBytes int // bytes of a blob accepted that does not hash to d
	}
	// The modes run in parallel (the stall mode waits); each fills its
	// own slot, read once the group is done.
	results := make([]result, len(tests))
	t.Run("modes", func(t *testing.T) {
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				srv := remotetest.New(t, remotetest.Options{})
				srv.Set("cas/"+d.String(), blob)
				srv.SetMode(tt.mode)
				srv.Queue(tt.queue...)
				o := testOptions(nil)
				o.StallTimeout = testStall
				o.Token = canary
				c := newClient(t, srv.URL, o)

				start := time.Now()
				f := fetch(t.Context(), c, d)
				wall := time.Since(start)

				outcome := accepted
				msg := ""
				switch {
				case f.openErr != nil:
					outcome, msg = clientError, f.openErr.Error()
				case f.readErr != nil:
					outcome, msg = readError, f.readErr.Error()
				case !f.accepted:
					outcome, msg = hashMismatch, fmt.Sprintf("%d bytes read cleanly", len(f.body))
				case cache.HashBytes(f.body) != d:
					outcome = acceptedBadBug
				}
				st := c.Stats()
				res := result{row: row{outcome, st.Retries >= tt.wantRetries}, retries: st.Retries, wall: wall, msg: msg}
				if f.accepted && cache.HashBytes(f.body) != d {
					res.badBytes = len(f.body)
				}
				results[i] = res

				// Each request ends within its budget: (retries+1)
				// timeouts plus backoff, or the stall timeout. Here all
				// but the stall take milliseconds; the bound is generous
				// for a loaded CI machine.
				if limit := time.Duration(testRetries+1)*testTimeout + testStall; wall > limit {
					t.Errorf("fetch took %v, more than %v", wall, limit)
				}
				if errors.Is(f.openErr, cache.ErrNotFound) {
					t.Errorf("a broken answer must not look like a plain miss: %v", f.openErr)
				}
				for _, r := range srv.OtherRequests() {
					if r.Header.Get("Authorization") != "" {
						t.Errorf("the other host received an Authorization header")
					}
				}
				if n := len(srv.OtherRequests()); n != 0 {
					t.Errorf("the other host received %d requests, want 0 (cross-host redirects are not followed)", n)
				}
				if strings.Contains(msg, canary) {
					t.Errorf("error shows the token: %s", msg)
				}
				if st.Down {
					t.Errorf("a server that answers must not mark the client down")
				}
			})
		}
	})

	got := map[string]row{}
	want := map[string]row{}
	var table strings.Builder
	fmt.Fprintf(&table, "T17 mode x outcome (blob %d KiB, timeout %v, stall %v, retries %d):\n", len(blob)>>10, testTimeout, testStall, testRetries)
	fmt.Fprintf(&table, "  %-42s %-22s %-8s %-8s %s\n", "mode", "outcome", "retries", "wall", "error")
	badAccepted, badBytesAccepted := 0, 0
	var maxWall time.Duration
	for i, tt := range tests {
		r := results[i]
		want[tt.name] = row{tt.want, true}
		got[tt.name] = r.row
		maxWall = max(maxWall, r.wall)
		if r.badBytes > 0 || r.Outcome == acceptedBadBug {
			badAccepted++
			badBytesAccepted += r.badBytes
		}
		fmt.Fprintf(&table, "  %-42s %-22s %-8d %-8s %s\n", tt.name, r.Outcome, r.retries, r.wall.Round(time.Millisecond), shorten(r.msg, 110))
	}
	fmt.Fprintf(&table, "  bad blobs accepted: %d (%d bytes); max wall time per fetch: %v", badAccepted, badBytesAccepted, maxWall.Round(time.Millisecond))
	t.Log(table.String())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if badAccepted != 0 {
		t.Errorf("%d bad blobs accepted, want 0", badAccepted)
	}
}

// TestRedirectLimit checks that same-host redirects are followed, at most
// five times.
func TestRedirectLimit(t *testing.T) {
	t.Parallel()
	blob, d := randomBlob(9, 1000)
	var hops atomic.Int32
	srv := remotetest.New(t, remotetest.Options{})
	srv.Set("cas/"+d.String(), blob)
	// RedirectSame lands on /moved/, which serves the object: follow it.
	srv.Queue(remotetest.RedirectSame)
	c := newClient(t, srv.URL, testOptions(nil))
	if f := fetch(t.Context(), c, d); !f.accepted {
		t.Fatalf("same-host redirect: %v %v", f.openErr, f.readErr)
	}
	// An endless same-host redirect loop is cut after 5 hops.
	loop := newLoopServer(t, &hops)
	c = newClient(t, loop, testOptions(nil))
	f := fetch(t.Context(), c, d)
	if f.openErr == nil || !strings.Contains(f.openErr.Error(), "more than 5 in a row") {
		t.Errorf("redirect loop: error = %v, want more than 5 in a row", f.openErr)
	}
	if n := hops.Load(); n != 6 {
		t.Errorf("redirect loop: %d requests, want 6 (the first and 5 redirects)", n)
	}
}

func newLoopServer(t *testing.T, hops *atomic.Int32) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		hops.Add(1)
		http.Redirect(w, r, r.URL.Path, http.StatusFound)
	})
	return newHTTPServer(t, mux)
}

// shorten cuts s to n bytes for the table.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
