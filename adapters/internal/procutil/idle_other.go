//go:build unix && !linux

package procutil

import "errors"

// idleGroup does nothing where there is no idle scheduling class.
func idleGroup(pgid int) error { return nil }

// IdleScheduling reports that this system has no idle scheduling class:
// Background programs run at nice 10 only.
func IdleScheduling() error {
	return errors.New("no idle scheduling class on this system (nice 10 only)")
}
