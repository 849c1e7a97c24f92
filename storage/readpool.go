package storage

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
)

// readPool is a second connection pool on the same file for reads only,
// opened on the first read (Open does not pay for it). Its connections are
// opened with PRAGMA query_only, so SQLite refuses any write made through
// them, and the driver begins their read transactions with a plain BEGIN:
// on the writer pool a read-only transaction turned query_only on and off
// around every read, and changing that flag expires every prepared
// statement of the connection, so each read compiled its statements again.
// The file is in WAL mode (the writer pool set it), so these readers never
// block the writer and each read transaction sees every commit made before
// it began.
type readPool struct {
	dsn   string
	mu    sync.Mutex // serialises opening and closing
	c     atomic.Pointer[stmtCache]
	shut  atomic.Bool
	viaWr atomic.Bool // benchmarks: read through the writer pool, as before
}

// readDSN is the data source name of the read pool for the file abs.
func readDSN(abs string, busyMillis int64) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyMillis))
	q.Add("_pragma", "query_only(1)")
	return (&url.URL{Scheme: "file", OmitHost: true, Path: abs, RawQuery: q.Encode()}).String()
}

// readers returns the read pool's statement cache (and through it the
// pool), opening the pool on first use.
func (db *DB) readers() (*stmtCache, error) {
	if c := db.rd.c.Load(); c != nil && !db.rd.shut.Load() {
		return c, nil
	}
	db.rd.mu.Lock()
	defer db.rd.mu.Unlock()
	if db.rd.shut.Load() {
		return nil, errClosed
	}
	if c := db.rd.c.Load(); c != nil {
		return c, nil
	}
	// sql.Open connects nothing: the first query opens a connection.
	p, err := sql.Open(safeDriverName, db.rd.dsn)
	if err != nil {
		return nil, fmt.Errorf("storage: open the read pool of %s: %w", db.path, err)
	}
	p.SetMaxOpenConns(8)
	p.SetMaxIdleConns(8)
	p.SetConnMaxIdleTime(0)
	p.SetConnMaxLifetime(0)
	c := newStmtCache(p)
	db.rd.c.Store(c)
	return c, nil
}

// readOpened reports whether the read pool has been opened.
func (db *DB) readOpened() bool { return db.rd.c.Load() != nil }

// closeReaders closes the read pool, if it was opened; later reads fail
// with errClosed.
func (db *DB) closeReaders() error {
	db.rd.mu.Lock()
	defer db.rd.mu.Unlock()
	db.rd.shut.Store(true)
	c := db.rd.c.Load()
	if c == nil {
		return nil
	}
	c.close()
	if err := c.pool.Close(); err != nil {
		return fmt.Errorf("storage: close the read pool: %w", err)
	}
	return nil
}

// rq is the querier of single-statement reads: the read pool's prepared
// statements (each statement is its own snapshot).
func (db *DB) rq() (querier, error) {
	if db.rd.viaWr.Load() {
		return poolQuerier{db.wstmts}, nil
	}
	c, err := db.readers()
	if err != nil {
		return nil, err
	}
	return poolQuerier{c}, nil
}

// read runs fn in a read transaction of the read pool, so that every
// query of fn sees the same snapshot.
func (db *DB) read(ctx context.Context, fn func(q *stmtTx) error) error {
	c := db.wstmts
	if !db.rd.viaWr.Load() {
		var err error
		if c, err = db.readers(); err != nil {
			return err
		}
	}
	tx, err := c.pool.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("storage: begin read: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only; nothing to keep
	return fn(&stmtTx{c: c, tx: tx, m: map[string]*sql.Stmt{}})
}
