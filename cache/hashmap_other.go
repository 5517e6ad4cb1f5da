//go:build !linux

package cache

import (
	"context"
	"os"
)

// Off Linux every file is hashed by reading it.
func hashMapped(ctx context.Context, f *os.File, size int64) (Digest, int64, bool, error) {
	return Digest{}, 0, false, nil
}
