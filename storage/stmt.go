package storage

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache holds one pool's prepared statements, each prepared on first
// use. database/sql keeps one driver statement per connection, so a query
// is compiled once per connection of the pool, not per call.
type stmtCache struct {
	mu   sync.Mutex
	pool *sql.DB
	m    map[string]*sql.Stmt
}

func newStmtCache(pool *sql.DB) *stmtCache {
	return &stmtCache{pool: pool, m: map[string]*sql.Stmt{}}
}

// get returns the prepared statement for query, preparing it on first use.
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[query]; ok {
		return s, nil
	}
	s, err := c.pool.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.m[query] = s
	return s, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, s := range c.m {
		_ = s.Close()
		delete(c.m, q)
	}
}

// prepared returns the writer pool's prepared statement for query.
func (db *DB) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	return db.wstmts.get(ctx, query)
}

func (db *DB) closeStmts() { db.wstmts.close() }

// stmtTx runs queries inside tx through one pool's prepared statements. It
// implements querier.
type stmtTx struct {
	c  *stmtCache
	tx *sql.Tx
	m  map[string]*sql.Stmt
}

// newStmtTx wraps a transaction of the writer pool (db.sql).
func newStmtTx(db *DB, tx *sql.Tx) *stmtTx {
	return &stmtTx{c: db.wstmts, tx: tx, m: map[string]*sql.Stmt{}}
}

// stmt returns the statement for query bound to the transaction, or nil
// when it cannot be prepared (the caller then runs the query directly and
// gets the error from there).
func (t *stmtTx) stmt(ctx context.Context, query string) *sql.Stmt {
	if s, ok := t.m[query]; ok {
		return s
	}
	p, err := t.c.get(ctx, query)
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

// poolQuerier runs single-statement reads outside a transaction through a
// pool's prepared statements (each statement its own snapshot). It
// implements querier.
type poolQuerier struct{ c *stmtCache }

func (p poolQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := p.c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

func (p poolQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := p.c.get(ctx, query)
	if err != nil {
		// No prepared statement: the query runs unprepared, so the row
		// carries the same error.
		return p.c.pool.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}
