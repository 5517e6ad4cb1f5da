//go:build !linux

package engine

import (
	"os"

	"github.com/cairn-run/cairn/internal/fsx"
)

// openCatFile refuses every file: without openat2's RESOLVE_NO_MAGICLINKS
// cairn cannot tell a link to a file of the opening process (/dev/fd/0)
// from any other, so cat runs.
func openCatFile(path string) (*os.File, bool) { return nil, false }

// openRedirectFile opens the file of a redirection as sh would; a
// symbolic link to a file of the opening process is not recognised here.
func openRedirectFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return fsx.OpenFile(name, flag, perm)
}
