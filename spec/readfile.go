package spec

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// maxFileRead bounds the size of a file file() reads. Its content is held
// in memory, in the evaluated spec and in every value made from it; a
// file of this size is data for a phase to read, not for the spec.
const maxFileRead = 64 << 20

// readRegular reads the regular file at path, of at most maxFileRead
// bytes. Anything else is refused before it is read: a FIFO would block
// for ever, /dev/zero never ends. The file is opened non-blocking, so
// that a FIFO swapped in after the stat cannot block the open either,
// and checked again once open.
func readRegular(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regularSmall(fi); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regularSmall(fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileRead+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileRead {
		return nil, fmt.Errorf("it is larger than %d MiB, the most file() reads", maxFileRead>>20)
	}
	return b, nil
}

func regularSmall(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("it is %s, not a regular file", fileKind(fi.Mode()))
	}
	if fi.Size() > maxFileRead {
		return fmt.Errorf("it is larger than %d MiB (%d bytes), the most file() reads", maxFileRead>>20, fi.Size())
	}
	return nil
}

// fileKind names the type of a file that is not a regular one.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}
