package cache

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairn-run/cairn/hint"
	"github.com/google/go-cmp/cmp"
)

// A restored file gets back the mtime recorded in its entry, from cas/ or
// inline; an entry without one (written before mtimes were recorded)
// leaves the restore's own time, as before.
func TestRestoreTreeSetsMTime(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	big := make([]byte, InlineMax+1)
	bigD, err := c.PutBytes(big)
	if err != nil {
		t.Fatal(err)
	}
	small := []byte("small\n")
	smallD := HashBytes(small)
	inline := []InlineBlob{{Digest: smallD, Data: small}}
	stored := time.Date(2001, 2, 3, 4, 5, 6, 123456789, time.UTC).UnixNano()
	for _, tc := range []struct {
		name   string
		file   OutputFile
		inline []InlineBlob
	}{
		{"cas", OutputFile{Path: "a.bam", Type: TypeFile, Mode: 0o644, Digest: bigD, Size: int64(len(big)), MTime: stored}, nil},
		{"inline", OutputFile{Path: "a.bam", Type: TypeFile, Mode: 0o644, Digest: smallD, Size: int64(len(small)), MTime: stored}, inline},
		{"cas, no mtime recorded", OutputFile{Path: "a.bam", Type: TypeFile, Mode: 0o644, Digest: bigD, Size: int64(len(big))}, nil},
		{"inline, no mtime recorded", OutputFile{Path: "a.bam", Type: TypeFile, Mode: 0o644, Digest: smallD, Size: int64(len(small))}, inline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			before := time.Now().Add(-time.Second)
			if err := c.RestoreTree(context.Background(), root, []OutputFile{tc.file}, tc.inline); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(filepath.Join(dir, "a.bam"))
			if err != nil {
				t.Fatal(err)
			}
			if tc.file.MTime != 0 {
				if diff := cmp.Diff(tc.file.MTime, fi.ModTime().UnixNano()); diff != "" {
					t.Errorf("restored mtime (-stored +got):\n%s", diff)
				}
			} else if fi.ModTime().Before(before) {
				t.Errorf("mtime %v, want the restore's own (after %v)", fi.ModTime(), before)
			}
		})
	}
}

// The mtime round-trips through the entry codec and the workspace memo,
// and an entry file without it still decodes (with zero).
func TestEntryMTimeCodec(t *testing.T) {
	t.Parallel()
	e := testEntry("mtime", HashBytes([]byte("a")), HashBytes([]byte("b")))
	for i := range e.Outputs {
		e.Outputs[i].MTime = int64(1e18) + int64(i)
	}
	b, err := EncodeEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e.Outputs, got.Outputs); diff != "" {
		t.Errorf("outputs after a round trip (-want +got):\n%s", diff)
	}
	rec := hint.NewWriter("", 0)
	encodeMemoRecord(rec, e)
	lean, err := decodeMemoRecord(e.Key, string(rec.B))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e.Outputs, lean.Outputs); diff != "" {
		t.Errorf("outputs through the memo (-want +got):\n%s", diff)
	}

	// An entry stored before mtimes were recorded decodes, without them.
	old, err := os.ReadFile(filepath.Join("testdata", "entry.golden"))
	if err != nil {
		t.Fatal(err)
	}
	oe, err := DecodeEntry(old)
	if err != nil {
		t.Fatalf("entry without mtimes: %v", err)
	}
	for _, o := range oe.Outputs {
		if o.MTime != 0 {
			t.Errorf("output %s of an entry without mtimes: mtime %d", o.Path, o.MTime)
		}
	}

	// A directory or symlink has no mtime to give back.
	bad := testEntry("mtime")
	bad.Outputs = append(bad.Outputs, OutputFile{Path: "zz", Type: TypeDir, Mode: 0o755, MTime: 1})
	if _, err := EncodeEntry(bad); err == nil {
		t.Error("EncodeEntry accepted a directory with an mtime")
	}
}
