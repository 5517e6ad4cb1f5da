package hint

import (
	"fmt"
	"os"
	"sync"
)

// ExeID names this build of cairn (its path, size and mtime). A hint
// whose content depends on how cairn computes it (the spec memo, the
// phase keys) carries it, so that a rebuilt binary never trusts one
// written by another.
func ExeID() string { return exeID() }

var exeID = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return "unknown executable"
	}
	st, err := os.Stat(exe)
	if err != nil {
		return "unknown executable"
	}
	return fmt.Sprintf("%s %d %d", exe, st.Size(), st.ModTime().UnixNano())
})
