//go:build unix

package codex

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the program in its own process group: the npm
// `codex` launcher starts the native binary as a child, and both must go.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
