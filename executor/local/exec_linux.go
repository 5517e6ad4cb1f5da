package local

import "syscall"

// procAttr puts a phase in its own process group and has the kernel kill
// it if cairn dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
