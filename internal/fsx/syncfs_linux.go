package fsx

import (
	"os"

	"golang.org/x/sys/unix"
)

type fsSyncer struct{ f *os.File }

func openFS(dir string) (FSSyncer, error) {
	f, err := OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	return fsSyncer{f}, nil
}

func (s fsSyncer) Sync() error {
	for {
		err := unix.Syncfs(int(s.f.Fd()))
		if err != unix.EINTR {
			if err != nil {
				return &os.PathError{Op: "syncfs", Path: s.f.Name(), Err: err}
			}
			return nil
		}
	}
}

func (s fsSyncer) Close() error { return s.f.Close() }
