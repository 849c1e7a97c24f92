package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// TestIsBusyByCode: a real "database is locked" from SQLite is recognised
// by its result code, through wrapping; the same words in an error that
// carries no SQLite code are not.
func TestIsBusyByCode(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	dsn := "file:" + path + "?_pragma=busy_timeout(0)"
	a, err := sql.Open("sqlite3", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Exec(`CREATE TABLE t(x)`); err != nil {
		t.Fatal(err)
	}
	holder, err := a.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	defer holder.ExecContext(ctx, `ROLLBACK`)
	b, err := sql.Open("sqlite3", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Exec(`INSERT INTO t VALUES (1)`)
	if err == nil {
		t.Fatal("a write under another connection's exclusive lock succeeded")
	}
	if !isBusy(err) || !isBusy(fmt.Errorf("storage: migrate: %w", err)) {
		t.Fatalf("%v (%T) is not recognised as busy", err, err)
	}
	if isBusy(errors.New(err.Error())) || isBusy(errors.New("database is locked")) {
		t.Fatal("the text alone was taken for SQLite's busy code")
	}
}

// TestBusyAtConnectionSetup: the case the open retry exists for. Turning a
// database to WAL mode while another connection holds it locked fails in
// the driver's connection setup (before busy_timeout applies); that error
// still carries SQLite's code, so the retry recognises it.
func TestBusyAtConnectionSetup(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	a, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	holder, err := a.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, `CREATE TABLE other(x)`); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	defer holder.ExecContext(ctx, `ROLLBACK`)
	b, err := sql.Open("sqlite3", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.PingContext(ctx)
	if err == nil {
		t.Fatal("WAL mode was set under another connection's exclusive lock")
	}
	if !isBusy(err) {
		t.Fatalf("%v (%T) is not recognised as busy", err, err)
	}
}
