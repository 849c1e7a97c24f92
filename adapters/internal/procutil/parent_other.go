//go:build unix && !linux

package procutil

import "syscall"

// diesWithParent does nothing where the kernel has no parent-death signal;
// there the program is stopped by Bridge's own shutdown only.
func diesWithParent(*syscall.SysProcAttr) {}
