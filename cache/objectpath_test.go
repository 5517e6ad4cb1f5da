package cache

import (
	"path/filepath"
	"testing"
)

// TestObjectPath: blob and entry paths are filepath.Join's, whatever the
// root (the filesystem root included), with the compressed suffix.
func TestObjectPath(t *testing.T) {
	var sum [32]byte
	for i := range sum {
		sum[i] = byte(i*37 + 11)
	}
	s := Digest(sum).String()
	for _, root := range []string{"/", "/tmp/c", "/a b/c\u00e9"} {
		c := &Dir{root: root}
		tests := []struct{ got, want string }{
			{c.entryPath(ActionID(sum)), filepath.Join(root, ACDir, s[:2], s)},
			{c.blobPath(Digest(sum), false), filepath.Join(root, CASDir, s[:2], s)},
			{c.blobPath(Digest(sum), true), filepath.Join(root, CASDir, s[:2], s) + CompressedSuffix},
		}
		for _, tt := range tests {
			if tt.got != tt.want {
				t.Errorf("root %q: got %q, want %q", root, tt.got, tt.want)
			}
		}
		if p := c.entryPath(ActionID(sum)); p[len(p)-entryRelLen:] != s[:2]+"/"+s {
			t.Errorf("root %q: entry path %q does not end in its %d-byte relative path", root, p, entryRelLen)
		}
	}
}
