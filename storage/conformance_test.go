package storage_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/storetest"
	"github.com/bridge-dev/bridge/storage"
)

// TestStoreConformance runs the core.Store conformance suite against the
// SQLite store.
func TestStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) core.Store {
		db, err := storage.Open(context.Background(), filepath.Join(t.TempDir(), "bridge.db"), storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

// TestSearchConformance runs the search part of the suite (the query forms
// both stores must read alike) against the SQLite store.
func TestSearchConformance(t *testing.T) {
	storetest.RunSearch(t, func(t *testing.T) core.Store {
		db, err := storage.Open(context.Background(), filepath.Join(t.TempDir(), "bridge.db"), storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

// TestDumpConformance runs the dump part of the suite (DumpStream hands
// over what Dump returns) against the SQLite store.
func TestDumpConformance(t *testing.T) {
	storetest.RunDump(t, func(t *testing.T) core.Store {
		db, err := storage.Open(context.Background(), filepath.Join(t.TempDir(), "bridge.db"), storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}
