package httpcache

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
)

// TestRealServers runs the client against real cache servers, started by
// scripts/httpcache-setup.sh, which writes their URLs to
// /var/tmp/httpcache/env:
//
//	. /var/tmp/httpcache/env && go test -run TestRealServers ./cache/remote/httpcache
//
// A server whose variable is unset is skipped, unless
// CAIRN_REQUIRE_SERVICES=1 (as in CI), which makes that a failure.
func TestRealServers(t *testing.T) {
	t.Parallel()
	servers := []struct{ name, env string }{
		{"nginx", "HTTPCACHE_NGINX_URL"},
		{"bazel-remote", "HTTPCACHE_BAZEL_REMOTE_URL"},
	}
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			url := os.Getenv(s.env)
			if url == "" {
				msg := s.env + " is not set; start the server with scripts/httpcache-setup.sh and source /var/tmp/httpcache/env"
				if os.Getenv("CAIRN_REQUIRE_SERVICES") == "1" {
					t.Fatal(msg + " (CAIRN_REQUIRE_SERVICES=1)")
				}
				t.Skip(msg)
			}
			checkRealServer(t, s.name, url)
		})
	}
}

func checkRealServer(t *testing.T, name, url string) {
	var w warnings
	c, err := New(url, Options{Env: noEnv, Warn: w.warn, Timeout: 10 * time.Second, StallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// Fresh content every run: the servers keep their data between runs.
	blob := make([]byte, 1<<20)
	rand.Read(blob)
	d := cache.HashBytes(blob)
	var key cache.ActionID
	rand.Read(key[:])
	entry := append([]byte("cairn-ac 1\n"), blob[:1000]...)

	// Misses.
	if ok, err := c.HasBlob(ctx, d); ok || err != nil {
		t.Errorf("HasBlob of a new blob = %v, %v; want false, nil", ok, err)
	}
	if _, err := c.OpenBlob(ctx, d); !errors.Is(err, cache.ErrNotFound) {
		t.Errorf("OpenBlob of a new blob: %v, want ErrNotFound", err)
	}
	if _, err := c.GetEntry(ctx, key); !errors.Is(err, cache.ErrNotFound) {
		t.Errorf("GetEntry of a new key: %v, want ErrNotFound", err)
	}

	// Round trips; the second PUT finds the object present.
	for range 2 {
		if err := c.PutBlob(ctx, d, int64(len(blob)), staticBody(blob)); err != nil {
			t.Fatal(err)
		}
		if err := c.PutEntry(ctx, key, entry); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := c.HasBlob(ctx, d); !ok || err != nil {
		t.Errorf("HasBlob after PutBlob = %v, %v; want true, nil", ok, err)
	}
	if f := fetch(ctx, c, d); !f.accepted {
		t.Errorf("fetch after PutBlob: %v %v (%d bytes)", f.openErr, f.readErr, len(f.body))
	}
	if got, err := c.GetEntry(ctx, key); err != nil || !bytes.Equal(got, entry) {
		t.Errorf("GetEntry after PutEntry = %d bytes, %v; want the %d bytes put (is AC validation off?)", len(got), err, len(entry))
	}
	empty := cache.HashBytes(nil)
	if err := c.PutBlob(ctx, empty, 0, staticBody(nil)); err != nil {
		t.Errorf("PutBlob of the empty blob: %v", err)
	}
	if f := fetch(ctx, c, empty); !f.accepted {
		t.Errorf("fetch of the empty blob: %v %v", f.openErr, f.readErr)
	}

	// Concurrent uploads of one blob (T18c).
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := c.PutBlob(ctx, d, int64(len(blob)), staticBody(blob)); err != nil {
				t.Errorf("concurrent PutBlob: %v", err)
			}
		})
	}
	wg.Wait()
	if f := fetch(ctx, c, d); !f.accepted {
		t.Errorf("fetch after concurrent uploads: %v %v", f.openErr, f.readErr)
	}

	// A CAS body that does not hash to its name (T18a). bazel-remote
	// refuses it; nginx stores anything, and the caller's hash check
	// discards it on the way back.
	bad := bytes.Clone(blob[:100_000])
	var wrong cache.Digest
	rand.Read(wrong[:])
	err = c.PutBlob(ctx, wrong, int64(len(bad)), staticBody(bad))
	switch name {
	case "bazel-remote":
		if err == nil || !strings.Contains(err.Error(), "500") {
			t.Errorf("PutBlob of a body that does not hash to its name: %v, want bazel-remote's 500", err)
		}
		if ok, _ := c.HasBlob(ctx, wrong); ok {
			t.Errorf("bazel-remote stored a blob that does not hash to its name")
		}
	default:
		if err != nil {
			t.Errorf("PutBlob to %s: %v (it checks nothing, so it should accept)", name, err)
		}
		if f := fetch(ctx, c, wrong); f.accepted {
			t.Errorf("the caller model accepted a blob that does not hash to its name")
		}
	}
	if msgs := w.list(); len(msgs) != 0 {
		t.Errorf("warnings: %q", msgs)
	}
	st := c.Stats()
	t.Logf("%s at %s: %+v", name, c, st)
}
