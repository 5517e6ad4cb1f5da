package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
)

// newTestClient returns a client for a fresh prefix in the bucket of the
// server scripts/s3-setup.sh starts, or skips (fails with
// CAIRN_REQUIRE_SERVICES=1).
func newTestClient(t *testing.T, o Options) *Client {
	t.Helper()
	url := os.Getenv("CAIRN_TEST_S3_URL")
	if url == "" || os.Getenv("AWS_ENDPOINT_URL_S3") == "" {
		if os.Getenv("CAIRN_REQUIRE_SERVICES") == "1" {
			t.Fatal("CAIRN_TEST_S3_URL not set (CAIRN_REQUIRE_SERVICES=1): run scripts/s3-setup.sh")
		}
		t.Skip("no S3 server: run scripts/s3-setup.sh and source /var/tmp/s3local/env")
	}
	c, err := New(context.Background(), fmt.Sprintf("%s/unit-%d", url, time.Now().UnixNano()), o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func opener(b []byte) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
}

// TestRoundTrip: blobs of every size class (empty, one PUT, multipart)
// come back byte-identical; a miss is cache.ErrNotFound.
func TestRoundTrip(t *testing.T) {
	c := newTestClient(t, Options{})
	ctx := context.Background()
	for _, size := range []int{0, 1, 100 << 10, multipartAbove, multipartAbove + 1, 3*PartSize + 12345} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			b := make([]byte, size)
			rand.Read(b)
			d := cache.HashBytes(b)
			if has, err := c.HasBlob(ctx, d); err != nil || has {
				t.Fatalf("HasBlob before upload = %v, %v", has, err)
			}
			if _, err := c.OpenBlob(ctx, d); !errors.Is(err, cache.ErrNotFound) {
				t.Fatalf("OpenBlob of a missing blob: %v, want ErrNotFound", err)
			}
			if err := c.PutBlob(ctx, d, int64(size), opener(b)); err != nil {
				t.Fatal(err)
			}
			if has, err := c.HasBlob(ctx, d); err != nil || !has {
				t.Fatalf("HasBlob after upload = %v, %v", has, err)
			}
			rc, err := c.OpenBlob(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, b) {
				t.Fatalf("got %d bytes back, want the %d uploaded", len(got), len(b))
			}
		})
	}
	var key cache.ActionID
	rand.Read(key[:])
	if _, err := c.GetEntry(ctx, key); !errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("GetEntry of a missing entry: %v", err)
	}
	if err := c.PutEntry(ctx, key, []byte("first")); err != nil {
		t.Fatal(err)
	}
	// Write-once: a second writer of the key keeps the first's bytes.
	if err := c.PutEntry(ctx, key, []byte("second")); err != nil {
		t.Fatal(err)
	}
	if b, err := c.GetEntry(ctx, key); err != nil || string(b) != "first" {
		t.Fatalf("GetEntry = %q, %v; want the first writer's bytes", b, err)
	}
}

// TestStoreRefusesDamagedUpload: bytes that do not hash to the blob's name
// are refused, by the store for one PUT (the signed payload hash and
// x-amz-checksum-sha256), by the client before completing a multipart
// upload; either way nothing is stored under the name.
func TestStoreRefusesDamagedUpload(t *testing.T) {
	c := newTestClient(t, Options{Retries: -1})
	ctx := context.Background()
	for _, size := range []int{1000, multipartAbove + PartSize} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			b := make([]byte, size)
			rand.Read(b)
			d := cache.HashBytes(b)
			b[size/2] ^= 1
			err := c.PutBlob(ctx, d, int64(size), opener(b))
			if err == nil {
				t.Fatal("damaged upload accepted")
			}
			t.Logf("refused: %v", err)
			if has, herr := c.HasBlob(ctx, d); herr != nil || has {
				t.Fatalf("after a refused upload (%v), HasBlob = %v, %v", err, has, herr)
			}
		})
	}
}

// TestReadOnlyWritesNothing: a read-only client refuses uploads without
// contacting the store.
func TestReadOnlyWritesNothing(t *testing.T) {
	c := newTestClient(t, Options{ReadOnly: true})
	d := cache.HashBytes([]byte("x"))
	if err := c.PutBlob(context.Background(), d, 1, opener([]byte("x"))); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("PutBlob: %v, want ErrReadOnly", err)
	}
	if err := c.PutEntry(context.Background(), cache.ActionID{}, []byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("PutEntry: %v, want ErrReadOnly", err)
	}
}

// TestParseURL: what an s3 URL may hold.
func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		url, bucket, prefix string
		path                bool
		err                 string
	}{
		{url: "s3://lab-cache/cairn", bucket: "lab-cache", prefix: "cairn/"},
		{url: "s3://lab-cache", bucket: "lab-cache"},
		{url: "s3://lab-cache/a/b/?path_style=true", bucket: "lab-cache", prefix: "a/b/", path: true},
		{url: "s3://key:secret@lab-cache/x", err: "user info"},
		{url: "s3://lab-cache/x?token=abc", err: "unknown query parameter"},
		{url: "s3:///x", err: "no bucket"},
	} {
		b, p, ps, err := parseURL(tc.url)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "abc") {
				t.Errorf("%s: err %v, want one saying %q without the secret", tc.url, err, tc.err)
			}
			continue
		}
		if err != nil || b != tc.bucket || p != tc.prefix || ps != tc.path {
			t.Errorf("%s: %q %q %v %v, want %q %q %v", tc.url, b, p, ps, err, tc.bucket, tc.prefix, tc.path)
		}
	}
}
