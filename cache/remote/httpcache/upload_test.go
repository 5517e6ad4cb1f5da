package httpcache

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote/remotetest"
	"github.com/google/go-cmp/cmp"
)

// TestUploadRejected is T18(a): a server that checks CAS digests (as
// bazel-remote does) answers 500 to a body that does not hash to the URL;
// PutBlob retries that once, reports it, and the client keeps working.
func TestUploadRejected(t *testing.T) {
	t.Parallel()
	srv := remotetest.New(t, remotetest.Options{VerifyCAS: true, PutStatus: http.StatusOK})
	c := newClient(t, srv.URL, testOptions(nil))
	good, d := randomBlob(18, 64<<10)
	bad := bytes.Clone(good)
	bad[100] ^= 0xff

	err := c.PutBlob(t.Context(), d, int64(len(bad)), staticBody(bad))
	if err == nil || !strings.Contains(err.Error(), "500 Internal Server Error: Failed to write compressed CAS blob to disk: checksums don't match") {
		t.Errorf("PutBlob of a body that does not hash to its name: error = %v, want the server's 500", err)
	}
	if n := srv.Count(http.MethodPut); n != 2 {
		t.Errorf("server saw %d PUTs, want 2 (a 500 on a CAS PUT is retried once)", n)
	}
	if _, ok := srv.Object("cas/" + d.String()); ok {
		t.Errorf("server stored the rejected blob")
	}
	// The client is not down: the next upload works.
	if err := c.PutBlob(t.Context(), d, int64(len(good)), staticBody(good)); err != nil {
		t.Errorf("PutBlob after a rejected upload: %v", err)
	}
	if st := c.Stats(); st.Down || st.Puts != 1 {
		t.Errorf("Stats = %+v, want not down and 1 accepted PUT", st)
	}
	t.Logf("T18(a) rejected upload: PUTs %d, error: %v", srv.Count(http.MethodPut)-1, err)
}

// TestUploadRetries checks which PUT answers are retried, and how often.
func TestUploadRetries(t *testing.T) {
	t.Parallel()
	blob, d := randomBlob(19, 4096)
	tests := map[string]struct {
		entry    bool
		codes    []int
		wantErr  bool
		wantPuts int
	}{
		"cas 500 once":        {codes: []int{500}, wantPuts: 2},
		"cas 500 twice":       {codes: []int{500, 500}, wantErr: true, wantPuts: 2},
		"cas 503 x3":          {codes: []int{503, 503, 503}, wantPuts: 4},
		"cas 503 500 503":     {codes: []int{503, 500, 503}, wantPuts: 4},
		"cas 413":             {codes: []int{413}, wantErr: true, wantPuts: 1},
		"cas 404":             {codes: []int{404}, wantErr: true, wantPuts: 1},
		"entry 500 x3":        {entry: true, codes: []int{500, 500, 500}, wantPuts: 4},
		"entry 500 x4":        {entry: true, codes: []int{500, 500, 500, 500}, wantErr: true, wantPuts: 4},
		"entry 400 (invalid)": {entry: true, codes: []int{400}, wantErr: true, wantPuts: 1},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := remotetest.New(t, remotetest.Options{})
			srv.QueuePut(tt.codes...)
			c := newClient(t, srv.URL, testOptions(nil))
			var err error
			if tt.entry {
				err = c.PutEntry(t.Context(), cache.ActionID(d), blob)
			} else {
				err = c.PutBlob(t.Context(), d, int64(len(blob)), staticBody(blob))
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("put error = %v, want error: %v", err, tt.wantErr)
			}
			if errors.Is(err, cache.ErrNotFound) {
				t.Errorf("a failed upload must not look like a miss: %v", err)
			}
			if n := srv.Count(http.MethodPut); n != tt.wantPuts {
				t.Errorf("server saw %d PUTs, want %d", n, tt.wantPuts)
			}
			for _, r := range srv.Requests() {
				if r.Method == http.MethodPut && len(r.Body) != len(blob) {
					t.Errorf("a PUT carried %d bytes, want %d", len(r.Body), len(blob))
				}
			}
		})
	}
}

// TestConcurrentUploads is T18(c): two clients upload the same blob and
// the same entry key at once, many times; the server ends with one valid
// object under each name.
func TestConcurrentUploads(t *testing.T) {
	t.Parallel()
	srv := remotetest.New(t, remotetest.Options{})
	blob, d := randomBlob(20, 256<<10)
	key := cache.ActionID{0xac}
	clients := []*Client{newClient(t, srv.URL, testOptions(nil)), newClient(t, srv.URL, testOptions(nil))}
	const perClient = 6
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(clients)*perClient)
	entries := map[string]bool{}
	for i, c := range clients {
		for j := range perClient {
			entry := fmt.Appendf(nil, "entry from client %d upload %d\n", i, j)
			entries[string(entry)] = true
			wg.Go(func() { errs <- c.PutBlob(t.Context(), d, int64(len(blob)), staticBody(blob)) })
			wg.Go(func() { errs <- c.PutEntry(t.Context(), key, entry) })
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	objs := srv.Objects()
	if diff := cmp.Diff([]string{"ac/" + key.String(), "cas/" + d.String()}, sortedKeys(objs)); diff != "" {
		t.Errorf("objects on the server (-want +got):\n%s", diff)
	}
	if got := cache.HashBytes(objs["cas/"+d.String()]); got != d {
		t.Errorf("blob on the server hashes to %s, want %s", got.Short(), d.Short())
	}
	if e := objs["ac/"+key.String()]; !entries[string(e)] {
		t.Errorf("entry on the server is %q, not one of the uploads", e)
	}
	for _, c := range clients {
		if f := fetch(t.Context(), c, d); !f.accepted {
			t.Errorf("fetch after concurrent uploads: %v %v", f.openErr, f.readErr)
		}
	}
	t.Logf("T18(c) concurrent uploads: %d PUTs, %d objects on the server, blob valid", srv.Count(http.MethodPut), len(objs))
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
