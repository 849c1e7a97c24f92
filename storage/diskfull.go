package storage

import (
	"errors"
	"syscall"

	"github.com/ncruces/go-sqlite3"

	"github.com/bridge-dev/bridge/core"
)

// lowSpace is the free space under which a failed write is taken for a
// full disk (SQLite writes pages of 4 KiB and log frames of a few).
const lowSpace = 1 << 20

// diskError names a write that failed because the disk under dir is full:
// SQLite's "database or disk is full", an ENOSPC anywhere in the chain, or
// an I/O error (the driver reports some ENOSPC writes as a bare "disk I/O
// error") while the disk has less than lowSpace free. Anything else is
// returned as it is.
func diskError(err error, dir string) error {
	if err == nil || errors.Is(err, core.ErrDiskFull) {
		return err
	}
	full := errors.Is(err, sqlite3.FULL) || errors.Is(err, syscall.ENOSPC)
	if !full && errors.Is(err, sqlite3.IOERR) && dir != "" {
		free, ok := freeSpace(dir)
		full = ok && free < lowSpace
	}
	if !full {
		return err
	}
	return core.DiskFull(dir, err)
}
