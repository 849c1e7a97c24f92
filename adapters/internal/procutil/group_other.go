//go:build !unix

package procutil

import (
	"errors"
	"os/exec"
)

// SetProcessGroup does nothing where process groups are not available.
func SetProcessGroup(cmd *exec.Cmd) {}

// SignalGroup kills the program itself where process groups are not
// available (there is no gentle signal either).
func SignalGroup(cmd *exec.Cmd, hard bool) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// LowerPriority does nothing where process priorities are not set this way.
func LowerPriority(cmd *exec.Cmd) {}

// IdlePriority does nothing where process priorities are not set this
// way.
func IdlePriority(cmd *exec.Cmd) error { return nil }

// IdleScheduling reports that Background programs get no lower priority
// on this system.
func IdleScheduling() error {
	return errors.New("process priorities are not lowered on this system")
}
