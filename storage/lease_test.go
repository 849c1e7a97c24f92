package storage_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/storetest"
	"github.com/bridge-dev/bridge/storage"
)

// TestStoreLeases runs the core.SessionLeases conformance suite against the
// SQLite store.
func TestStoreLeases(t *testing.T) {
	storetest.RunLeases(t, func(t *testing.T) core.Store {
		db, err := storage.Open(context.Background(), filepath.Join(t.TempDir(), "bridge.db"), storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}
