//go:build !unix

package acp

import "os/exec"

func setProcessGroup(cmd *exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, hard bool) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
