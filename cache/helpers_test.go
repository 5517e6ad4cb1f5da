package cache

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newDir opens a fresh cache in a temp directory.
func newDir(t testing.TB) *Dir {
	t.Helper()
	c, err := Open(filepath.Join(t.TempDir(), "cache"))
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

// writeFile writes b to a new file in a temp dir and returns its path.
func writeFile(t testing.TB, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
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

// longTier reports whether the long reliability tier is on (CAIRN_LONG=1,
// make test-long): tests then use RELIABILITY.md's full counts.
func longTier() bool { return os.Getenv("CAIRN_LONG") != "" }

// noPack makes c write every entry as a file of its own (formats 1 and 2),
// as it does where packs are impossible.
func noPack(c *Dir) {
	c.packs.mu.Lock()
	c.packs.off = true
	c.packs.mu.Unlock()
}

// testEntry returns a valid entry named by n whose outputs are files with
// the given blobs.
func testEntry(n string, outs ...Digest) *Entry {
	comps := []Component{{Kind: "command", Value: n}}
	e := &Entry{Format: EntryFormat, Key: ComputeKey(comps), Phase: "p", Components: comps}
	for i, d := range outs {
		e.Outputs = append(e.Outputs, OutputFile{Path: fmt.Sprintf("out%d", i), Type: TypeFile, Mode: 0o644, Digest: d})
	}
	return e
}
