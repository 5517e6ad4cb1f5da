//go:build !linux

package outputs

import (
	"os"
	"path/filepath"

	"github.com/cairn-run/cairn/workspace"
)

// dirStatter stats the paths of a cached tree by their absolute paths
// (direct or not).
type dirStatter struct {
	root   string
	direct bool
}

const directStats = 64

func newDirStatter(root string) *dirStatter { return &dirStatter{root: root} }

func (s *dirStatter) close() {}

func (s *dirStatter) abs(rel string) string { return filepath.Join(s.root, filepath.FromSlash(rel)) }

// lstat stats workspace path rel without following a final symlink.
func (s *dirStatter) lstat(rel string) (workspace.FileStat, error) {
	return workspace.LstatPath(s.abs(rel))
}

// entries returns how many entries workspace directory rel holds.
func (s *dirStatter) entries(rel string) (int, error) {
	f, err := os.Open(s.abs(rel))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	return len(names), err
}
