//go:build linux

package watch

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// raw encodes one struct inotify_event with its name padded to nameLen.
func raw(wd int32, mask uint32, name string, nameLen int) []byte {
	b := make([]byte, unix.SizeofInotifyEvent+nameLen)
	binary.NativeEndian.PutUint32(b[0:], uint32(wd))
	binary.NativeEndian.PutUint32(b[4:], mask)
	binary.NativeEndian.PutUint32(b[12:], uint32(nameLen))
	copy(b[unix.SizeofInotifyEvent:], name)
	return b
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestVerdict(t *testing.T) {
	modify := raw(1, unix.IN_MODIFY, "a.txt", 16)
	cases := []struct {
		name string
		buf  []byte
		want string // "" for quiet
	}{
		{"no bytes", nil, ""},
		{"one event", modify, `"a.txt" changed in a watched directory (modify)`},
		{"event on the directory itself", raw(3, unix.IN_DELETE_SELF, "", 0), "a watched directory changed (delete_self)"},
		{"overflow after an event", cat(modify, raw(-1, unix.IN_Q_OVERFLOW, "", 0)), "the inotify queue overflowed"},
		{"overflow alone", raw(-1, unix.IN_Q_OVERFLOW, "", 0), "the inotify queue overflowed"},
		{"unknown bits", raw(1, 1<<27, "", 0), "(0x8000000)"},
		{"no mask bit", raw(1, 0, "", 0), "(0x0)"},
		{"short header", modify[:10], "10 bytes, short of a header"},
		{"event then short header", cat(modify, modify[:3]), "at byte 32: 3 bytes, short of a header"},
		{"name past the end", modify[:20], "a name of 16 bytes, past the 20 read"},
	}
	huge := raw(1, unix.IN_MODIFY, "", 0)
	binary.NativeEndian.PutUint32(huge[12:], 0xffffffff)
	cases = append(cases, struct {
		name string
		buf  []byte
		want string
	}{"name length 2^32-1", huge, "a name of 4294967295 bytes"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := verdict(c.buf)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("verdict = %v, want quiet", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("verdict = %v, want it to hold %q", err, c.want)
			}
		})
	}
}

// TestDecodeKernelBytes decodes what this kernel writes, not bytes built
// by the test, so a layout mistake cannot hide in both.
func TestDecodeKernelBytes(t *testing.T) {
	dir := t.TempDir()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	wd, err := unix.InotifyAddWatch(fd, dir, mask)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", 200)
	if err := os.WriteFile(filepath.Join(dir, long), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	n, err := unix.Read(fd, buf)
	if err != nil {
		t.Fatal(err)
	}
	var got []event
	if err := decode(buf[:n], func(ev event) { got = append(got, ev) }); err != nil {
		t.Fatal(err)
	}
	w := int32(wd)
	want := []event{
		{wd: w, mask: unix.IN_CREATE, name: long},
		{wd: w, mask: unix.IN_MODIFY, name: long},
		{wd: w, mask: unix.IN_CLOSE_WRITE, name: long},
		{wd: w, mask: unix.IN_CREATE | unix.IN_ISDIR, name: "d"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(event{})); diff != "" {
		t.Errorf("decoded events (-want +got):\n%s", diff)
	}
}

// FuzzVerdict feeds arbitrary bytes where the kernel's events go: the
// decoder must never panic, and no non-empty read may come out quiet.
func FuzzVerdict(f *testing.F) {
	f.Add([]byte{})
	f.Add(raw(1, unix.IN_MODIFY, "a.txt", 16))
	f.Add(cat(raw(1, unix.IN_CREATE, "x", 4), raw(-1, unix.IN_Q_OVERFLOW, "", 0)))
	f.Add(raw(2, unix.IN_MOVED_FROM, "a\x00b", 8)[:20])
	f.Fuzz(func(t *testing.T, buf []byte) {
		err := verdict(buf)
		if (err == nil) != (len(buf) == 0) {
			t.Fatalf("verdict(%d bytes) = %v", len(buf), err)
		}
		consumed := 0
		derr := decode(buf, func(ev event) {
			if strings.IndexByte(ev.name, 0) >= 0 {
				t.Fatalf("name %q holds a NUL", ev.name)
			}
			consumed++
		})
		if derr == nil && len(buf) > 0 && consumed == 0 {
			t.Fatal("decode accepted bytes holding no event")
		}
	})
}
