//go:build unix

package procutil

import (
	"errors"
	"syscall"
)

// processRuns reports whether process pid exists (signal 0 is refused
// only with ESRCH when there is none).
func processRuns(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
