//go:build !linux

package local

import (
	"os"

	"github.com/cairn-run/cairn/internal/fsx"
)

// openRedirectFile opens the file of a redirection as sh would; a
// symbolic link to a file of the opening process is not recognised here.
func openRedirectFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return fsx.OpenFile(name, flag, perm)
}
