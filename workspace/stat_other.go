//go:build !linux

package workspace

import "os"

// StatPath is os.Stat reduced to what the digest memory compares.
func StatPath(abs string) (FileStat, error) {
	fi, err := os.Stat(abs)
	if err != nil {
		return FileStat{}, err
	}
	return StatOf(fi), nil
}

// StatAt is StatPath; elsewhere the directory is not used.
func StatAt(_ *os.File, _, abs string) (FileStat, error) { return StatPath(abs) }

// LstatPath is os.Lstat reduced to what the digest memory compares.
func LstatPath(abs string) (FileStat, error) {
	fi, err := os.Lstat(abs)
	if err != nil {
		return FileStat{}, err
	}
	return StatOf(fi), nil
}

// lstatAt is LstatPath; elsewhere the directory is not used.
func lstatAt(_ *os.File, _, abs string) (FileStat, error) { return LstatPath(abs) }
