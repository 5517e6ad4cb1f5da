package engine

import (
	"os"
	"path/filepath"

	"github.com/cairn-run/cairn/internal/fsx"
)

// writeFileAtomic writes data to path through a temporary file in the same
// directory and a rename, so a reader sees the old or the new content,
// never a mix. With durable, the file is fsynced before the rename and the
// directory after it. A run's state.json is always fsynced before the
// rename, durable or not: after a power cut it must name complete content
// (the old or the new), since a run record that does not parse is lost;
// other state files (digests, keys.json) are rebuilt when damaged.
func writeFileAtomic(path string, data []byte, perm os.FileMode, durable bool) error {
	label := "ws"
	if filepath.Base(path) == "state.json" {
		label = "state"
		return fsx.WriteFileAtomic(path, data, perm, label, true, durable)
	}
	return fsx.WriteFileAtomic(path, data, perm, label, durable, durable)
}
