//go:build linux

package watch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// event is one struct inotify_event as read from the instance.
type event struct {
	wd     int32
	mask   uint32
	cookie uint32
	name   string
}

// decode calls fn for each event in buf, the bytes of one read of an
// inotify descriptor (host byte order: the kernel's). A truncated header
// or a name running past the end is an error, after fn has seen the
// events before it.
func decode(buf []byte, fn func(event)) error {
	for off := 0; off < len(buf); {
		if len(buf)-off < unix.SizeofInotifyEvent {
			return fmt.Errorf("inotify event at byte %d: %d bytes, short of a header", off, len(buf)-off)
		}
		h := buf[off : off+unix.SizeofInotifyEvent]
		ev := event{
			wd:     int32(binary.NativeEndian.Uint32(h[0:])),
			mask:   binary.NativeEndian.Uint32(h[4:]),
			cookie: binary.NativeEndian.Uint32(h[8:]),
		}
		n := uint64(binary.NativeEndian.Uint32(h[12:]))
		off += unix.SizeofInotifyEvent
		if n > uint64(len(buf)-off) {
			return fmt.Errorf("inotify event at byte %d: a name of %d bytes, past the %d read", off-unix.SizeofInotifyEvent, n, len(buf))
		}
		name := buf[off : off+int(n)]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i] // the kernel pads names with NULs
		}
		ev.name = string(name)
		off += int(n)
		fn(ev)
	}
	return nil
}

// verdict says why the events in buf, read from a watch, mean not quiet:
// never nil for a non-empty buf, whatever its bytes.
func verdict(buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	var first *event
	overflow := false
	err := decode(buf, func(ev event) {
		if first == nil {
			first = &ev
		}
		overflow = overflow || ev.mask&unix.IN_Q_OVERFLOW != 0
	})
	switch {
	case overflow:
		return errors.New("the inotify queue overflowed")
	case err != nil:
		return err
	case first == nil:
		return errors.New("inotify returned bytes holding no event")
	case first.name == "":
		return fmt.Errorf("a watched directory changed (%s)", maskString(first.mask))
	default:
		return fmt.Errorf("%q changed in a watched directory (%s)", first.name, maskString(first.mask))
	}
}

var maskNames = []struct {
	bit  uint32
	name string
}{
	{unix.IN_MODIFY, "modify"}, {unix.IN_ATTRIB, "attrib"}, {unix.IN_CLOSE_WRITE, "close_write"},
	{unix.IN_CREATE, "create"}, {unix.IN_DELETE, "delete"}, {unix.IN_DELETE_SELF, "delete_self"},
	{unix.IN_MOVED_FROM, "moved_from"}, {unix.IN_MOVED_TO, "moved_to"}, {unix.IN_MOVE_SELF, "move_self"},
	{unix.IN_UNMOUNT, "unmount"}, {unix.IN_Q_OVERFLOW, "overflow"}, {unix.IN_IGNORED, "ignored"},
	{unix.IN_ISDIR, "isdir"},
}

// maskString names the bits of an event mask, for messages.
func maskString(m uint32) string {
	var parts []string
	for _, b := range maskNames {
		if m&b.bit != 0 {
			parts = append(parts, b.name)
			m &^= b.bit
		}
	}
	if m != 0 || len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("%#x", m))
	}
	return strings.Join(parts, "|")
}
