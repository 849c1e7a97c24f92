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

// IdlePriority lowers the program's process group to nice 10 and, where
// the system has it, to the idle scheduling class (SCHED_IDLE on Linux:
// the group runs on CPU time nothing else wants, and gives a core up at
// once to any other program that wakes). The children and threads it
// starts later inherit both. It returns the system's refusal of the idle
// class (the group then runs at nice 10 only; IdleScheduling reports it
// too).
//
// Only for a program that holds nothing the live session waits for: one
// starved by other work while it holds a lock (a database both write)
// would stall whoever waits for the lock.
func IdlePriority(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	_ = syscall.Setpriority(syscall.PRIO_PGRP, cmd.Process.Pid, backgroundNice)
	return idleGroup(cmd.Process.Pid)
}
