//go:build !linux

package fsx

import (
	"errors"
	"fmt"
)

func openFS(dir string) (FSSyncer, error) {
	return nil, fmt.Errorf("syncfs %s: %w", dir, errors.ErrUnsupported)
}
