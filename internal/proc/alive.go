// Package proc answers questions about local processes that run records
// and temp-file cleanup both ask: is the process that wrote this still
// there?
package proc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Alive reports whether process pid exists on this host and is not a
// zombie. A process of another user counts as alive.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// A zombie is dead for our purpose.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return false
		}
	}
	return true
}
