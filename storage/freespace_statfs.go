//go:build linux || darwin

package storage

import "syscall"

// freeSpace is the space left to an unprivileged writer on the file system
// holding dir.
func freeSpace(dir string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
