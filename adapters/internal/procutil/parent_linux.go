//go:build linux

package procutil

import "syscall"

// diesWithParent has the kernel send SIGKILL to the program when the thread
// that started it ends. Go ends an OS thread only when a goroutine locked to
// it returns without unlocking, which Bridge and its dependencies never do,
// so in practice this is when the Bridge process ends.
func diesWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
