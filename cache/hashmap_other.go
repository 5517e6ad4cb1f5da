//go:build !linux

package cache

import "os"

// Off Linux every file is hashed by reading it.
func hashMapped(f *os.File, size int64) (Digest, int64, bool) { return Digest{}, 0, false }
