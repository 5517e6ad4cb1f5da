//go:build !linux

package engine

import "os"

// statPath is os.Stat reduced to what the digest memory compares.
func statPath(abs string) (fileStat, error) {
	fi, err := os.Stat(abs)
	if err != nil {
		return fileStat{}, err
	}
	return statOf(fi), nil
}

// statAt is statPath; elsewhere the directory is not used.
func statAt(_ *os.File, _, abs string) (fileStat, error) { return statPath(abs) }
