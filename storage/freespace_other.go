//go:build !linux && !darwin

package storage

// freeSpace is unknown here: only SQLITE_FULL and ENOSPC name a full disk.
func freeSpace(string) (uint64, bool) { return 0, false }
