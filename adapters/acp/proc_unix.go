//go:build unix

package acp

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the agent in its own process group: an npm launcher
// (node) may start further children, and all of them must go with it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig (terminate first, kill when hard) to the group.
func signalGroup(cmd *exec.Cmd, hard bool) {
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
