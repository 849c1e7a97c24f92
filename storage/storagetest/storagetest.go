// Package storagetest opens real, throw-away storage databases for tests in
// other packages.
package storagetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/bridge-dev/bridge/storage"
)

// Open returns a fresh database in a file under tb.TempDir(), closed when
// the test ends. It fails the test if the database cannot be opened.
func Open(tb testing.TB) *storage.DB {
	tb.Helper()
	return OpenWith(tb, storage.Options{})
}

// OpenWith is Open with options (a Hook, a BusyTimeout).
func OpenWith(tb testing.TB, opts storage.Options) *storage.DB {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "bridge.db")
	db, err := storage.Open(context.Background(), path, opts)
	if err != nil {
		tb.Fatalf("storagetest: open %s: %v", path, err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("storagetest: close %s: %v", path, err)
		}
	})
	return db
}
