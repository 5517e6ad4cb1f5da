package reproduce

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
)

func TestTreeDiff(t *testing.T) {
	d1, d2 := cache.Digest{1}, cache.Digest{2}
	file := func(path string, d cache.Digest, mode uint32) cache.OutputFile {
		return cache.OutputFile{Path: path, Type: "file", Digest: d, Mode: mode, MTime: 1}
	}
	tests := []struct {
		name          string
		cached, rerun []cache.OutputFile
		want          []string
	}{
		{"same content, other mtime and read bits", []cache.OutputFile{file("a", d1, 0o644)},
			[]cache.OutputFile{{Path: "a", Type: "file", Digest: d1, Mode: 0o600, MTime: 2}}, nil},
		{"content differs", []cache.OutputFile{file("a", d1, 0o644)}, []cache.OutputFile{file("a", d2, 0o644)}, []string{"a"}},
		{"executable bit differs", []cache.OutputFile{file("a", d1, 0o644)}, []cache.OutputFile{file("a", d1, 0o755)}, []string{"a"}},
		{"missing output", []cache.OutputFile{file("a", d1, 0o644)}, nil, []string{"a"}},
		{"extra file in a directory",
			[]cache.OutputFile{{Path: "d", Type: "dir"}, file("d/x", d1, 0o644)},
			[]cache.OutputFile{{Path: "d", Type: "dir"}, file("d/x", d1, 0o644), file("d/y", d1, 0o644)}, []string{"d/y"}},
		{"symlink target differs",
			[]cache.OutputFile{{Path: "l", Type: "symlink", Target: "a"}},
			[]cache.OutputFile{{Path: "l", Type: "symlink", Target: "b"}}, []string{"l"}},
		{"file became a directory",
			[]cache.OutputFile{file("o", d1, 0o644)},
			[]cache.OutputFile{{Path: "o", Type: "dir"}}, []string{"o"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, treeDiff(tt.cached, tt.rerun)); diff != "" {
				t.Errorf("treeDiff (-want +got):\n%s", diff)
			}
		})
	}
}
