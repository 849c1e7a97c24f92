package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// storeKind is the store an end-to-end subtest keeps its records in:
// the data directory's SQLite file (Bridge's default), or a PostgreSQL
// database its config.json names ("store"), as a team would point Bridge
// at one.
type storeKind struct {
	name string // "sqlite" or "postgres"
}

// eachStore runs body as the subtests "sqlite" and "postgres": the
// end-to-end flows over the fake harness (create, prompt, history, rename,
// archive, checkpoint, export and import, search, migration, the queue,
// the web) run the binary on both stores. The PostgreSQL subtest's data
// directories each name a database of their own on the server
// BRIDGE_TEST_POSTGRES names (pgtest: outside CI a temporary cluster when
// it is unset; under CI=true a missing server fails the test, it never
// skips). The two subtests run side by side: each has data directories
// (and on PostgreSQL a database) of its own.
func eachStore(t *testing.T, body func(t *testing.T, st storeKind)) {
	t.Helper()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body(t, storeKind{name: name})
		})
	}
}

// dataDir returns a fresh data directory whose config.json holds cfg (none
// when cfg is empty, on SQLite). On PostgreSQL config.json also names a
// new database (url).
func (st storeKind) dataDir(t *testing.T, cfg map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	if u := st.url(t, dir); u != "" {
		c := map[string]any{"store": u}
		for k, v := range cfg {
			c[k] = v
		}
		cfg = c
	}
	if len(cfg) > 0 {
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ConfigFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// url is, on PostgreSQL, the URL of a new database of the test's own (a
// copy of one the store migrated once) for the data directory dir, which
// must hold no SQLite file when the test ends: every process the test ran
// on dir kept its record in PostgreSQL. On SQLite it is "".
func (st storeKind) url(t *testing.T, dir string) string {
	t.Helper()
	if st.name != "postgres" {
		return ""
	}
	u := pgtest.Copy(t, "migrated", func(ctx context.Context, url string) error {
		db, err := postgres.Open(ctx, url, postgres.Options{})
		if err != nil {
			return err
		}
		return db.Close()
	})
	// Runs after the cleanups of the processes started on dir (they are
	// registered later).
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(dir, DatabaseFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a process wrote %s in %s although config.json names a PostgreSQL record (stat: %v)", DatabaseFile, dir, err)
		}
	})
	return u
}

// testRecord is a store as the tests read it back, either kind.
type testRecord interface {
	core.Store
	core.Searcher
	core.Dumper
}

// openRecord opens the record of data directory dir for the test's own
// checks: the database its config.json names ("store"), else its SQLite
// file. It may be open in a running bridge process too. It is closed when
// the test ends.
func openRecord(t testing.TB, dir string) testRecord {
	t.Helper()
	ctx := context.Background()
	var cfg struct {
		Store string `json:"store"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, ConfigFile)); err == nil {
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatalf("config.json of %s: %v", dir, err)
		}
	}
	var db testRecord
	var err error
	if cfg.Store != "" {
		db, err = postgres.Open(ctx, cfg.Store, postgres.Options{})
	} else {
		db, err = storage.Open(ctx, filepath.Join(dir, DatabaseFile), storage.Options{})
	}
	if err != nil {
		t.Fatalf("open the record of %s: %v", dir, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// queryInt runs a query returning one integer against either store; the
// query's arguments are written $1, $2… (SQLite reads them too).
func queryInt(t testing.TB, db testRecord, query string, args ...any) int {
	t.Helper()
	var n int
	var err error
	switch db := db.(type) {
	case *storage.DB:
		err = db.SQL().QueryRow(query, args...).Scan(&n)
	case *postgres.DB:
		err = db.Pool().QueryRow(context.Background(), query, args...).Scan(&n)
	default:
		t.Fatalf("queryInt: a %T is neither store", db)
	}
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
