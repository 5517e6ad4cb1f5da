//go:build !linux

package local

import "syscall"

// procAttr puts a phase in its own process group. Without Pdeathsig,
// phases that outlive a killed cairn are killed by the next run.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
