package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"

	"github.com/ncruces/go-sqlite3"
)

// reprepares runs query (with args) n times on one connection of pool, each
// time inside a read-only transaction begun by the driver as database/sql
// begins one, and returns how many times SQLite compiled the statement
// again (SQLITE_STMTSTATUS_REPREPARE). args returns the arguments of run i.
func reprepares(t *testing.T, pool *sql.DB, query string, n int, args func(i int) []any) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	count := 0
	err = conn.Raw(func(dc any) error {
		sc := dc.(*safeConn)
		raw := sc.c.Raw()
		stmt, _, err := raw.Prepare(query)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i := 0; i < n; i++ {
			tx, err := sc.BeginTx(ctx, driver.TxOptions{ReadOnly: true})
			if err != nil {
				return err
			}
			for j, a := range args(i) {
				switch v := a.(type) {
				case int:
					err = stmt.BindInt64(j+1, int64(v))
				case int64:
					err = stmt.BindInt64(j+1, v)
				case bool:
					err = stmt.BindBool(j+1, v)
				case string:
					err = stmt.BindText(j+1, v)
				}
				if err != nil {
					return err
				}
			}
			for stmt.Step() {
			}
			// As the driver does after each query (rows.Close).
			if err := stmt.Reset(); err != nil {
				return err
			}
			if err := stmt.ClearBindings(); err != nil {
				return err
			}
			if err := tx.Rollback(); err != nil {
				return err
			}
		}
		count = stmt.Status(sqlite3.STMTSTATUS_REPREPARE, false)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return count
}

// TestReadsKeepTheirCompiledStatements: the statements of a history page and
// of a list page, run again and again in read transactions of the read
// pool, are compiled once. The same statement in read-only transactions of
// the writer pool is compiled again each time (the driver turns query_only
// on and off, which expires the connection's statements), and a list query
// with a bound LIMIT is compiled again whenever the limit changes: the two
// costs the read pool and the literal LIMIT remove.
func TestReadsKeepTheirCompiledStatements(t *testing.T) {
	ctx := context.Background()
	db := openInternal(t)
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := db.Append(ctx, s.ID, msg("a"), msg("b")); err != nil {
			t.Fatal(err)
		}
	}
	c, err := db.readers()
	if err != nil {
		t.Fatal(err)
	}
	page := chainSQL(64)
	pageArgs := func(i int) []any { return []any{s.ID, int64(6 - i%6)} }
	if n := reprepares(t, c.pool, page, 20, pageArgs); n != 0 {
		t.Errorf("a history page's statement on the read pool was compiled again %d times in 20 reads", n)
	}
	if n := reprepares(t, db.sql, page, 20, pageArgs); n == 0 {
		t.Errorf("control: on the writer pool the statement was never compiled again; the read pool's point is gone")
	}

	// Every shape of a list page, paged with a changing cursor.
	cursor := record.EncodeCursor(1<<62, "~")
	for _, archived := range []bool{false, true} {
		for _, harness := range []string{"", "fake"} {
			for _, cur := range []string{"", cursor} {
				q := core.ListQuery{IncludeArchived: archived, Harness: harness, Cursor: cur}
				query, args, err := listSQL(q, 100)
				if err != nil {
					t.Fatal(err)
				}
				n := reprepares(t, c.pool, query, 20, func(i int) []any {
					a := append([]any(nil), args...)
					for j := range a {
						if v, ok := a[j].(int64); ok {
							a[j] = v - int64(i) // a new cursor each page
						}
					}
					return a
				})
				if n != 0 {
					t.Errorf("%+v: the list page's statement was compiled again %d times in 20 pages", q, n)
				}
			}
		}
	}
	limits := []int{10, 20, 50, 100}
	bound := `SELECT ` + sessionCols + ` FROM sessions WHERE archived = 0 ORDER BY updated_at DESC, id DESC LIMIT ?`
	if n := reprepares(t, c.pool, bound, 20, func(i int) []any { return []any{limits[i%len(limits)] + 1} }); n == 0 {
		t.Errorf("control: a bound LIMIT was never compiled again; the literal LIMIT's point is gone")
	}
}
