package storage

import (
	"context"
	"database/sql"
)

// prepared returns the database-wide prepared statement for query,
// preparing it on first use. database/sql keeps one driver statement per
// connection, so a query is compiled once per connection, not per call.
func (db *DB) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	db.stmtMu.Lock()
	defer db.stmtMu.Unlock()
	if s, ok := db.stmts[query]; ok {
		return s, nil
	}
	s, err := db.sql.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	db.stmts[query] = s
	return s, nil
}

func (db *DB) closeStmts() {
	db.stmtMu.Lock()
	defer db.stmtMu.Unlock()
	for q, s := range db.stmts {
		_ = s.Close()
		delete(db.stmts, q)
	}
}

// stmtTx runs queries inside tx through the database's prepared
// statements. It implements querier.
type stmtTx struct {
	db *DB
	tx *sql.Tx
	m  map[string]*sql.Stmt
}

func newStmtTx(db *DB, tx *sql.Tx) *stmtTx {
	return &stmtTx{db: db, tx: tx, m: map[string]*sql.Stmt{}}
}

// stmt returns the statement for query bound to the transaction, or nil
// when it cannot be prepared (the caller then runs the query directly and
// gets the error from there).
func (t *stmtTx) stmt(ctx context.Context, query string) *sql.Stmt {
	if s, ok := t.m[query]; ok {
		return s
	}
	p, err := t.db.prepared(ctx, query)
	if err != nil {
		return nil
	}
	s := t.tx.StmtContext(ctx, p)
	t.m[query] = s
	return s
}

func (t *stmtTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t *stmtTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

func (t *stmtTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}
