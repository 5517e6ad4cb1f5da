package hint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var pairs = Store[map[string]string]{
	Format: NewFormat("test-pairs", 2, "ws"),
	Perm:   0o644,
	Encode: func(w *Writer, m map[string]string) {
		w.Len(len(m))
		for _, k := range []string{"a", "b"} {
			if v, ok := m[k]; ok {
				w.Str(k)
				w.Str(v)
			}
		}
	},
	Decode: func(r *Reader) (map[string]string, error) {
		n := r.Len()
		m := make(map[string]string, n)
		for i := 0; i < n && r.OK(); i++ {
			k := r.Str()
			m[k] = r.Str()
		}
		return m, nil
	},
}

// TestStoreLoadMisses: a store's file round-trips, and a missing,
// damaged, cut or foreign-version file is a miss, never an error or a
// half-read value.
func TestStoreLoadMisses(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pairs")
	want := map[string]string{"a": "1", "b": "2"}
	if err := pairs.Save(p, want); err != nil {
		t.Fatal(err)
	}
	got, ok := pairs.Load(p)
	if !ok {
		t.Fatal("saved file not loaded")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-saved +loaded):\n%s", diff)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("save left %d files, want 1 (no temp file)", len(ents))
	}
	good, _ := os.ReadFile(p)
	other := NewFormat("test-pairs", 3, "ws")
	tests := map[string][]byte{
		"empty":         nil,
		"header only":   []byte(pairs.Format.Header()),
		"cut":           good[:len(good)-1],
		"flipped byte":  func() []byte { c := append([]byte(nil), good...); c[len(c)-TrailerSize-1] ^= 1; return c }(),
		"other version": AppendTrailer(append([]byte(other.Header()), good[len(pairs.Format.Header()):len(good)-TrailerSize]...)),
		"trailing body": AppendTrailer(append(append([]byte(nil), good[:len(good)-TrailerSize]...), 0)),
	}
	for name, b := range tests {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if got, ok := pairs.Load(p); ok || got != nil {
			t.Errorf("%s: loaded %v, want a miss", name, got)
		}
	}
	if _, ok := pairs.Load(filepath.Join(dir, "missing")); ok {
		t.Error("missing file loaded")
	}
}

// TestRacy: a timestamp is trusted only when it lies clearly before the
// recording: 50 ms for a fine-grained clock, 2 s more for a whole-second
// one; mtime and ctime alike.
func TestRacy(t *testing.T) {
	const at = int64(1_700_000_000_500_000_000)
	tests := []struct {
		name         string
		mtime, ctime int64
		racy         bool
	}{
		{"both long before", at - 10e9, at - 10e9, false},
		{"mtime just before", at - 10e6, at - 10e9, true},
		{"ctime just before", at - 10e9, at - 10e6, true},
		{"mtime 60 ms before", at - 60e6, at - 10e9, false},
		{"mtime after", at + 1, at - 10e9, true},
		{"whole-second mtime 1.5 s before", at - 1.5e9, at - 10e9, true},
		{"whole-second ctime 1.5 s before", at - 10e9, at - 1.5e9, true},
		{"whole-second mtime 3.5 s before", at - 3.5e9, at - 10e9, false},
		{"fine mtime 1.5 s before", at - 1.5e9 + 1, at - 10e9, false},
	}
	for _, tt := range tests {
		if got := Racy(tt.mtime, tt.ctime, at); got != tt.racy {
			t.Errorf("%s: Racy = %v, want %v", tt.name, got, tt.racy)
		}
	}
}
