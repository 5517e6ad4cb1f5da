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

// lstatPath is os.Lstat reduced to what the digest memory compares.
func lstatPath(abs string) (fileStat, error) {
	fi, err := os.Lstat(abs)
	if err != nil {
		return fileStat{}, err
	}
	return statOf(fi), nil
}

// lstatAt is lstatPath; elsewhere the directory is not used.
func lstatAt(_ *os.File, _, abs string) (fileStat, error) { return lstatPath(abs) }
