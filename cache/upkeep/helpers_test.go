package upkeep

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/klauspost/compress/zstd"
)

// Test fixtures: the store's own (package cache's tests), and the layout
// FORMAT.md defines, for planting and damaging objects directly.

// sampleSize is package cache's compression sample: a blob larger than it
// is compressed in a stream.
const sampleSize = 256 << 10

// entryPath is where c stores the entry for key.
func entryPath(c *cache.Dir, key cache.ActionID) string {
	h := key.String()
	return filepath.Join(c.Root(), cache.ACDir, h[:2], h)
}

// blobPath is where c stores blob d, raw or compressed.
func blobPath(c *cache.Dir, d cache.Digest, compressed bool) string {
	h := d.String()
	p := filepath.Join(c.Root(), cache.CASDir, h[:2], h)
	if compressed {
		p += cache.CompressedSuffix
	}
	return p
}

// statBlob returns the file of blob d, raw or compressed, if there is one.
func statBlob(c *cache.Dir, d cache.Digest) (string, bool) {
	for _, compressed := range []bool{false, true} {
		p := blobPath(c, d, compressed)
		if _, err := os.Lstat(p); err == nil {
			return p, true
		}
	}
	return "", false
}

// blockEncoder compresses as a put does: one zstd frame recording its
// content size.
func blockEncoder() *zstd.Encoder {
	e, err := zstd.NewWriter(nil)
	if err != nil {
		panic(err)
	}
	return e
}

// packHeader is the first line of a pack file.
var packHeader = "cairn-ac " + strconv.Itoa(cache.EntryFormatPacked) + "\n"

// objectMode is the mode a put gives an object in c.
func objectMode(c *cache.Dir) os.FileMode {
	if c.Shared() {
		return cache.SharedObjectPerm
	}
	return 0o444
}

// sign returns the stored entry b signed with key, as a cache with that
// signing key writes it (FORMAT.md, "Signatures").
func sign(key, b []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return append(append(append(b[:len(b):len(b)], "sig hmac-sha256 "...), hex.EncodeToString(m.Sum(nil))...), '\n')
}

// newDir opens a fresh cache in a temp directory.
func newDir(t testing.TB) *cache.Dir {
	t.Helper()
	c, err := cache.Open(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// randomBytes returns n incompressible bytes, the same for the same n.
func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(n), byte(n >> 8), byte(n >> 16)})
	r.Read(b)
	return b
}

// textBytes returns n bytes of compressible text.
func textBytes(n int) []byte {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		sb.WriteString("step ")
		sb.WriteString(strings.Repeat("abcdefghij"[i%10:i%10+1], i%7+1))
		sb.WriteString(" loss=0.0")
		sb.WriteByte(byte('0' + i%10))
		sb.WriteString(" ok\n")
	}
	return []byte(sb.String()[:n])
}

// listDir returns the names in dir, or nil if it does not exist.
func listDir(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// corruptFile overwrites the byte at off in a read-only cache object.
func corruptFile(t testing.TB, p string, off int64) {
	t.Helper()
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

// putSample stores sampleEntry's blobs and returns the entry.
func putSample(t *testing.T, c *cache.Dir) *cache.Entry {
	t.Helper()
	for _, b := range sampleBlobs() {
		if _, err := c.PutBytes(b); err != nil {
			t.Fatal(err)
		}
	}
	return sampleEntry()
}

// replaceFile rewrites a read-only cache object in place.
func replaceFile(t *testing.T, p string, b []byte) {
	t.Helper()
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sampleEntry returns a valid entry whose blobs are the contents given by
// sampleBlobs.
func sampleEntry() *cache.Entry {
	comps := []cache.Component{
		{Kind: "command", Value: "python train.py"},
		{Kind: "input", Name: "data/train.csv", Value: "0644 " + cache.HashBytes([]byte("csv")).String()},
		{Kind: "param", Name: "lr", Value: "0.01"},
	}
	return &cache.Entry{
		Format:     cache.EntryFormat,
		Key:        cache.ComputeKey(comps),
		Phase:      "train",
		Components: comps,
		Outputs: []cache.OutputFile{
			{Path: "model", Type: cache.TypeDir, Mode: 0o755},
			{Path: "model/weights.bin", Type: cache.TypeFile, Mode: 0o644, Digest: cache.HashBytes([]byte("weights")), Size: 7},
			{Path: "model/latest", Type: cache.TypeSymlink, Mode: 0o777, Target: "weights.bin"},
			{Path: "metrics.json", Type: cache.TypeFile, Mode: 0o644, Digest: cache.HashBytes(nil)},
		},
		ExitCode:   0,
		Stdout:     cache.HashBytes([]byte("stdout")),
		Stderr:     cache.HashBytes([]byte("stderr")),
		Cost:       1.25,
		Iterations: 300,
		Metrics:    json.RawMessage(`{"loss":0.12}`),
		DurationMS: 61234,
		Created:    time.Date(2025, 3, 1, 12, 30, 0, 0, time.UTC),
		Host:       "gpu-01",
		User:       "ana",
	}
}

func sampleBlobs() [][]byte {
	return [][]byte{[]byte("weights"), nil, []byte("stdout"), []byte("stderr")}
}
