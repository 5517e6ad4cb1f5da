package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache/kernelcopy"
)

func TestRestoreFileReplacesAndSetsMode(t *testing.T) {
	// The umask must not filter perm.
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)

	c := newDir(t)
	content := []byte("new content\n")
	d, err := c.PutBytes(content)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dst := filepath.Join(dir, "out")
	if err := os.WriteFile(dst, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.RestoreFile(d, dst, 0o755); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dst)
	if !bytes.Equal(got, content) {
		t.Errorf("dst = %q, want %q", got, content)
	}
	if st, _ := os.Stat(dst); st.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", st.Mode().Perm())
	}
	if names := listDir(t, dir); !cmp.Equal(names, []string{"out"}) {
		t.Errorf("dst dir holds %q, want only out", names)
	}
}

func TestRestoreFileReplacesSymlinkNotTarget(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	d, _ := c.PutBytes([]byte("data"))
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	dst := filepath.Join(dir, "link")
	if err := os.Symlink("victim", dst); err != nil {
		t.Fatal(err)
	}
	if err := c.RestoreFile(d, dst, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("restore wrote through a symlink: victim = %q", b)
	}
	if st, _ := os.Lstat(dst); !st.Mode().IsRegular() {
		t.Errorf("dst mode %v, want a regular file", st.Mode())
	}
}

func TestRestoreFileMissingDir(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	d, _ := c.PutBytes([]byte("data"))
	if err := c.RestoreFile(d, filepath.Join(t.TempDir(), "no", "such", "out"), 0o644); err == nil {
		t.Error("RestoreFile into a missing directory succeeded")
	}
}

// withoutKernelCopy makes FICLONE and copy_file_range unsupported until the
// test ends, as on a filesystem or kernel without them. Tests that use it
// must not run in parallel.
func withoutKernelCopy(t testing.TB) {
	t.Helper()
	setCopyHooks(t,
		func(dst, src *os.File) error { return syscall.EOPNOTSUPP },
		func(dst, src *os.File, roff, woff *int64, n int) (int, error) { return 0, syscall.EXDEV })
}

// setCopyHooks replaces the kernel copy's calls (nil keeps one, and
// forgets what the filesystems were found to support) until the test ends.
func setCopyHooks(t testing.TB, clone func(dst, src *os.File) error, rng func(dst, src *os.File, roff, woff *int64, n int) (int, error)) {
	t.Helper()
	t.Cleanup(kernelcopy.SetHooks(kernelcopy.Hooks{Clone: clone, Range: rng}))
}

// copyHook counts the calls of a replaced clone or copy_file_range.
type copyHook struct{ clones, ranges int }

// realClone stands in for a reflink where the filesystem has none: it
// copies src to dst (io.Copy uses copy_file_range or a plain copy), so
// tests can take the reflink path anywhere.
func realClone(dst, src *os.File) error {
	_, err := io.Copy(dst, io.NewSectionReader(src, 0, 1<<62))
	return err
}

func realRange(dst, src *os.File, roff, woff *int64, n int) (int, error) {
	buf := make([]byte, n)
	m, err := src.ReadAt(buf, *roff)
	if m == 0 && err == io.EOF {
		return 0, nil
	}
	if m == 0 {
		return 0, err
	}
	w, err := dst.WriteAt(buf[:m], *woff)
	*roff += int64(w)
	*woff += int64(w)
	return w, err
}

// TestRestoreLargeRawBlob restores a raw blob large enough for the kernel
// copy through every path: the kernel's own (reflink where this
// filesystem has it, else copy_file_range), an emulated reflink, reflink
// unsupported, and both unsupported (user space). A good blob comes back
// exactly; a damaged one is quarantined and never lands under the
// destination's name.
func TestRestoreLargeRawBlob(t *testing.T) {
	const size = 2*kernelcopy.Chunk + 12345
	paths := map[string]func(t *testing.T){
		"kernel":         func(t *testing.T) {},
		"emulated clone": func(t *testing.T) { setCopyHooks(t, realClone, realRange) },
		"no clone": func(t *testing.T) {
			setCopyHooks(t, func(dst, src *os.File) error { return syscall.EOPNOTSUPP }, nil)
		},
		"user space": func(t *testing.T) { withoutKernelCopy(t) },
	}
	damages := map[string]func(t *testing.T, p string){
		"none":          nil,
		"first byte":    func(t *testing.T, p string) { corruptFile(t, p, 0) },
		"last chunk":    func(t *testing.T, p string) { corruptFile(t, p, size-7) },
		"truncated":     func(t *testing.T, p string) { os.Chmod(p, 0o644); os.Truncate(p, size/2) },
		"one byte more": func(t *testing.T, p string) { os.Chmod(p, 0o644); appendByte(t, p) },
	}
	content := randomBytes(t, size)
	for pname, setup := range paths {
		for dname, damage := range damages {
			t.Run(pname+"/"+dname, func(t *testing.T) {
				setup(t)
				c := newDir(t)
				d, err := c.PutBytes(content)
				if err != nil {
					t.Fatal(err)
				}
				p := c.blobPath(d, false)
				if _, err := os.Stat(p); err != nil {
					t.Fatalf("blob not stored raw: %v", err)
				}
				if damage != nil {
					damage(t, p)
				}
				dir := t.TempDir()
				dst := filepath.Join(dir, "out")
				os.WriteFile(dst, []byte("previous"), 0o600)
				err = c.RestoreFile(d, dst, 0o644)
				got, _ := os.ReadFile(dst)
				if names := listDir(t, dir); !cmp.Equal(names, []string{"out"}) {
					t.Errorf("restore left %q in dst's directory", names)
				}
				if damage == nil {
					if err != nil || !bytes.Equal(got, content) {
						t.Fatalf("RestoreFile = %v; dst has %d bytes, equal %v", err, len(got), bytes.Equal(got, content))
					}
					return
				}
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.Moved == "" {
					t.Fatalf("RestoreFile of a damaged blob = %v, want a quarantining *CorruptError", err)
				}
				if string(got) != "previous" {
					t.Errorf("dst = %d bytes, want it untouched", len(got))
				}
				if c.HasBlob(d) {
					t.Error("the damaged blob is still in the cache")
				}
			})
		}
	}
}

func appendByte(t *testing.T, p string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte{0}); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreKernelCopyFallsBackOnce: on filesystems without reflink or
// copy_file_range each is tried once per process, not once per file, and
// the files are still restored (copy_file_range's fallback, then user
// space's).
func TestRestoreKernelCopyFallsBackOnce(t *testing.T) {
	for name, rangeWorks := range map[string]bool{"no clone": true, "neither": false} {
		t.Run(name, func(t *testing.T) {
			var h copyHook
			setCopyHooks(t,
				func(dst, src *os.File) error { h.clones++; return syscall.EOPNOTSUPP },
				func(dst, src *os.File, roff, woff *int64, n int) (int, error) {
					h.ranges++
					if !rangeWorks {
						return 0, syscall.EXDEV
					}
					return realRange(dst, src, roff, woff, n)
				})
			c := newDir(t)
			dir := t.TempDir()
			const files = 3
			for i := range files {
				content := randomBytes(t, kernelcopy.MinSize+i)
				d, err := c.PutBytes(content)
				if err != nil {
					t.Fatal(err)
				}
				dst := filepath.Join(dir, fmt.Sprint("out", i))
				if err := c.RestoreFile(d, dst, 0o644); err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(dst); !bytes.Equal(got, content) {
					t.Errorf("%s: wrong content", dst)
				}
			}
			if h.clones != 1 {
				t.Errorf("FICLONE tried %d times for %d files, want once", h.clones, files)
			}
			// copy_file_range: one call per chunk and one at EOF for
			// each file, or a single failed call.
			want := 1
			if rangeWorks {
				want = 2 * files
			}
			if h.ranges != want {
				t.Errorf("copy_file_range called %d times, want %d", h.ranges, want)
			}
		})
	}
}

// TestRestoreKernelCopyOtherErrors: a reflink that fails for another
// reason than support (here after writing part of the file) falls back to
// copy_file_range from a clean start, and is tried again for the next
// file; a copy_file_range that fails before copying a byte falls back to
// user space. The files are restored exactly.
func TestRestoreKernelCopyOtherErrors(t *testing.T) {
	var h copyHook
	setCopyHooks(t,
		func(dst, src *os.File) error {
			h.clones++
			dst.Write(bytes.Repeat([]byte("partial "), kernelcopy.MinSize))
			return syscall.EAGAIN
		},
		func(dst, src *os.File, roff, woff *int64, n int) (int, error) {
			h.ranges++
			if h.ranges == 1 {
				return 0, syscall.ENOSPC
			}
			return realRange(dst, src, roff, woff, n)
		})
	c := newDir(t)
	dir := t.TempDir()
	for i := range 2 {
		content := randomBytes(t, kernelcopy.MinSize+i)
		d, err := c.PutBytes(content)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, fmt.Sprint("out", i))
		if err := c.RestoreFile(d, dst, 0o644); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(dst); !bytes.Equal(got, content) {
			t.Errorf("%s: wrong content (%d bytes)", dst, len(got))
		}
	}
	if h.clones != 2 || h.ranges != 3 {
		t.Errorf("FICLONE tried %d times, copy_file_range %d, want 2 and 3", h.clones, h.ranges)
	}
}

// TestRestoreKernelCopyIOError: an I/O error in the middle of the kernel
// copy fails the restore without touching dst or leaving a temp file, and
// does not quarantine the blob (an I/O error says nothing about it).
func TestRestoreKernelCopyIOError(t *testing.T) {
	setCopyHooks(t,
		func(dst, src *os.File) error { return syscall.EOPNOTSUPP },
		func(dst, src *os.File, roff, woff *int64, n int) (int, error) {
			if *woff > 0 {
				return 0, syscall.EIO
			}
			return realRange(dst, src, roff, woff, 4096)
		})
	c := newDir(t)
	d, err := c.PutBytes(randomBytes(t, 2*kernelcopy.MinSize))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dst := filepath.Join(dir, "out")
	os.WriteFile(dst, []byte("previous"), 0o600)
	err = c.RestoreFile(d, dst, 0o644)
	if !errors.Is(err, syscall.EIO) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("RestoreFile = %v, want EIO and not corrupt", err)
	}
	if got, _ := os.ReadFile(dst); string(got) != "previous" {
		t.Errorf("dst = %d bytes, want it untouched", len(got))
	}
	if names := listDir(t, dir); !cmp.Equal(names, []string{"out"}) {
		t.Errorf("restore left %q in dst's directory", names)
	}
	if !c.HasBlob(d) {
		t.Error("an I/O error quarantined a good blob")
	}
}

// TestRestoreBadKernelCopy: if copy_file_range lands wrong bytes, the
// file that landed is what is hashed, so the wrong bytes never get dst's
// name; the second try copies in user space, restores the right content
// and keeps the good blob.
func TestRestoreBadKernelCopy(t *testing.T) {
	setCopyHooks(t, func(dst, src *os.File) error { return syscall.EOPNOTSUPP },
		func(dst, src *os.File, roff, woff *int64, n int) (int, error) {
			at := *woff
			m, err := realRange(dst, src, roff, woff, n)
			if m > 10 {
				dst.WriteAt([]byte("X"), at+10)
			}
			return m, err
		})
	c := newDir(t)
	content := randomBytes(t, 2*kernelcopy.MinSize)
	d, err := c.PutBytes(content)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if err := c.RestoreFile(d, dst, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, content) {
		t.Error("dst holds the kernel copy's wrong bytes")
	}
	if !c.HasBlob(d) {
		t.Error("a bad copy quarantined a good blob")
	}
}

// TestRestoreLargeCompressedBlob: a large compressible blob is stored
// compressed and streamed through the decoder, never handed to the kernel
// copies (which would copy the compressed bytes).
func TestRestoreLargeCompressedBlob(t *testing.T) {
	setCopyHooks(t,
		func(dst, src *os.File) error { t.Error("FICLONE of a compressed blob"); return syscall.EOPNOTSUPP },
		func(dst, src *os.File, roff, woff *int64, n int) (int, error) {
			t.Error("copy_file_range of a compressed blob")
			return 0, syscall.EXDEV
		})
	c := newDir(t)
	content := textBytes(4 * kernelcopy.MinSize)
	d, err := c.PutBytes(content)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.blobPath(d, true)); err != nil {
		t.Fatalf("blob not stored compressed: %v", err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if err := c.RestoreFile(d, dst, 0o640); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, content) {
		t.Error("wrong content")
	}
	if st, _ := os.Stat(dst); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
}

// TestRestoreTreeInline: a file whose blob the entry holds inline is
// written from there, with its mode, though cas/ lacks it; inline content
// that does not match the file's digest (an entry built in memory, never
// decoded) is refused as corrupt and the target is left alone.
func TestRestoreTreeInline(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	dst := t.TempDir()
	root, err := os.OpenRoot(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	data := []byte("small output\n")
	d := HashBytes(data)
	tree := []OutputFile{
		{Path: "out", Type: TypeDir, Mode: 0o755},
		{Path: "out/a.txt", Type: TypeFile, Mode: 0o751, Digest: d, Size: int64(len(data))},
	}
	if err := c.RestoreTree(context.Background(), root, tree, []InlineBlob{{Digest: d, Data: data}}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dst, "out", "a.txt")
	got, err := os.ReadFile(p)
	if err != nil || string(got) != string(data) {
		t.Fatalf("restored %q, %v; want %q", got, err, data)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o751 {
		t.Errorf("restored mode %v, want 0751", st.Mode().Perm())
	}
	if err := c.RestoreTree(context.Background(), root, tree, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("restore without the inline blob (cas/ lacks it) = %v, want ErrNotFound", err)
	}
	os.WriteFile(p, []byte("mine\n"), 0o644)
	err = c.RestoreTree(context.Background(), root, tree, []InlineBlob{{Digest: d, Data: []byte("tampered\n")}})
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("restore of tampered inline content = %v, want ErrCorrupt", err)
	}
	if got, _ := os.ReadFile(p); string(got) != "mine\n" {
		t.Errorf("target = %q after a refused restore, want it untouched", got)
	}
	if names, _ := os.ReadDir(filepath.Join(dst, "out")); len(names) != 1 {
		t.Errorf("out/ holds %d names after a refused restore, want 1 (no temp file left)", len(names))
	}
}
