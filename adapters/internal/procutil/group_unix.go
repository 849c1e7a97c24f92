//go:build unix

package procutil

import (
	"os/exec"
	"syscall"
)

// SetProcessGroup puts the program in its own process group: an npm
// launcher (node) may start the native binary as a child, and both must go
// when the session ends. Where the system can, the program is also killed
// when Bridge itself dies (diesWithParent), even by SIGKILL: being in a
// group of its own, it would otherwise outlive Bridge and keep writing to
// its home.
func SetProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	diesWithParent(cmd.SysProcAttr)
}

// SignalGroup asks the program's group to terminate (SIGTERM), or kills it
// (SIGKILL) when hard is set.
func SignalGroup(cmd *exec.Cmd, hard bool) {
	if cmd.Process == nil {
		return
	}
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	if hard {
		_ = cmd.Process.Kill()
	}
}

// backgroundNice is the niceness of a Background program.
const backgroundNice = 10

// LowerPriority lowers the CPU priority of the program's process group
// (nice 10); the children it starts inherit it. Best effort.
func LowerPriority(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Setpriority(syscall.PRIO_PGRP, cmd.Process.Pid, backgroundNice)
	}
}
