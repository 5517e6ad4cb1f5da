package workspace

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cairn-run/cairn/internal/fsx"
	"github.com/cairn-run/cairn/internal/proc"
)

// WriteFileAtomic writes data to path through a temporary file in the same
// directory and a rename, so a reader sees the old or the new content,
// never a mix. With durable, the file is fsynced before the rename and the
// directory after it. A run's state.json is always fsynced before the
// rename, durable or not: after a power cut it must name complete content
// (the old or the new), since a run record that does not parse is lost;
// other state files (digests, keys, phasekeys) are rebuilt when damaged.
// A full disk is reported with the free space left (fsx.NoSpace).
func WriteFileAtomic(path string, data []byte, perm os.FileMode, durable bool) error {
	label := "ws"
	syncFile := durable
	if filepath.Base(path) == "state.json" {
		label, syncFile = "state", true
	}
	return fsx.NoSpace(fsx.WriteFileAtomic(path, data, perm, label, syncFile, durable), filepath.Dir(path))
}

// removeRestoreTemps removes the temp files a restore of the cache leaves
// next to an output (.<name>.cairn-<16 hex>, see cache.RestoreFile) when
// its cairn dies: one directory listing per directory holding outputs.
// Called only after a run died, with the workspace lock held, so no
// restore of this workspace is under way.
func (w *Workspace) removeRestoreTemps(outputs map[string]string) {
	seen := map[string]bool{}
	for out := range outputs {
		dir := filepath.Dir(w.Abs(out))
		if seen[dir] {
			continue
		}
		seen[dir] = true
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, ent := range ents {
			name := ent.Name()
			i := strings.LastIndex(name, ".cairn-")
			if !strings.HasPrefix(name, ".") || i < 0 || !isHex16(name[i+len(".cairn-"):]) || !ent.Type().IsRegular() {
				continue
			}
			_ = os.Remove(filepath.Join(dir, name))
		}
	}
}

func isHex16(s string) bool {
	if len(s) != 16 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// RemoveStaleTemps removes the temp files WriteFileAtomic leaves behind
// when its process dies between creating and renaming one: in .cairn/ and
// in the folder of the run that died (named by .cairn/current), and the
// restore temps next to outputs (the keys of outputs, workspace paths)
// that run may have left. Only state temps
// whose writer (the pid in the name) is gone are removed, so a cairn plan
// saving digests meanwhile is not disturbed.
func (w *Workspace) RemoveStaleTemps(outputs map[string]string) {
	dirs := []string{w.StateDir()}
	if b, err := os.ReadFile(w.CurrentFile()); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" && filepath.IsLocal(id) && !strings.ContainsRune(id, filepath.Separator) {
			dirs = append(dirs, filepath.Join(w.RunsDir(), id))
		}
		w.removeRestoreTemps(outputs)
	}
	for _, dir := range dirs {
		temps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
		for _, p := range temps {
			_, rest, _ := strings.Cut(filepath.Base(p), ".tmp-")
			pidStr, _, ok := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(pidStr)
			if ok && err == nil && !proc.Alive(pid) {
				_ = os.Remove(p)
			}
		}
	}
}
