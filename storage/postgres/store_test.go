package postgres_test

import (
	"context"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/storetest"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var ctx = context.Background()

// open returns a store on a fresh database of its own.
func open(t testing.TB) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(ctx, pgtest.URL(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestStoreConformance runs core/storetest, the Store port's conformance
// suite, against PostgreSQL.
func TestStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) core.Store { return open(t) })
}

// TestDumpConformance runs the dump part of the suite against PostgreSQL:
// DumpStream hands over what Dump returns.
func TestDumpConformance(t *testing.T) {
	storetest.RunDump(t, func(t *testing.T) core.Store { return open(t) })
}

// TestSearchConformance runs the search part of the suite against
// PostgreSQL: the same hits as SQLite's for every documented query form.
func TestSearchConformance(t *testing.T) {
	storetest.RunSearch(t, func(t *testing.T) core.Store { return open(t) })
}
