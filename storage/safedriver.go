package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
	sqlite "github.com/ncruces/go-sqlite3/driver"

	"github.com/bridge-dev/bridge/core"
)

// safeDriverName is the database/sql driver Bridge opens: the pure Go
// SQLite driver with every call into it guarded against panics.
//
// Why: the driver runs SQLite inside a WebAssembly runtime whose memory is
// bounded per connection; a statement that needs more (a row of hundreds of
// megabytes) makes the driver panic. database/sql does not expect a driver
// to panic inside a prepared statement of a transaction: the panic leaves
// the transaction's internal lock held, so the rollback that follows waits
// forever while Bridge's write lock is held, and every later write hangs.
// Recovering here, below database/sql, turns the panic into an error of the
// one statement; the connection is then marked bad, so database/sql closes it
// instead of reusing it.
const safeDriverName = "bridge-sqlite3"

func init() { sql.Register(safeDriverName, safeDriver{}) }

// errDriverPanic is returned in place of a driver panic.
var errDriverPanic = errors.New("connection discarded")

type safeDriver struct{}

func (safeDriver) Open(name string) (driver.Conn, error) {
	c, err := safeDriver{}.OpenConnector(name)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

func (safeDriver) OpenConnector(name string) (driver.Connector, error) {
	c, err := (&sqlite.SQLite{}).OpenConnector(name)
	if err != nil {
		return nil, err
	}
	return safeConnector{c: c, dir: dsnDir(name)}, nil
}

type safeConnector struct {
	c    driver.Connector
	init func(*sqlite3.Conn) error // run on each new connection, after the extensions
	dir  string                    // of the database file
}

// dsnDir is the folder of the database file a "file:" DSN names.
func dsnDir(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Path == "" {
		return ""
	}
	return filepath.Dir(u.Path)
}

func (s safeConnector) Driver() driver.Driver { return safeDriver{} }

func (s safeConnector) Connect(ctx context.Context) (_ driver.Conn, err error) {
	defer recoverInto(&err, nil)
	inner, err := s.c.Connect(ctx)
	if err != nil {
		return nil, diskError(err, s.dir)
	}
	c := inner.(sqlite.Conn)
	if err := registerExtensions(c.Raw()); err != nil {
		c.Close()
		return nil, fmt.Errorf("storage: register extensions: %w", err)
	}
	if s.init != nil {
		if err := s.init(c.Raw()); err != nil {
			c.Close()
			return nil, fmt.Errorf("storage: set up connection: %w", err)
		}
	}
	return &safeConn{c: c, dir: s.dir}, nil
}

// recoverInto turns a panic into *err (wrapping errDriverPanic) and marks
// the connection broken. It must be deferred directly.
//
// It also names a write that failed for want of disk space as such
// (diskError): every call into the driver passes here, so no caller sees a
// bare "disk I/O error" for a full disk.
func recoverInto(err *error, c *safeConn) {
	if v := recover(); v != nil {
		if c != nil {
			c.broken.Store(true)
		}
		*err = core.E(core.CodeInternal, fmt.Sprintf("storage: the SQLite driver panicked: %.200v", v), errDriverPanic)
		return
	}
	if *err != nil && c != nil {
		*err = diskError(*err, c.dir)
	}
}

// safeConn is one driver connection. After a panic it is broken: every
// later call fails with driver.ErrBadConn, and database/sql discards it.
type safeConn struct {
	c      sqlite.Conn
	broken atomic.Bool
	dir    string // of the database file, for diskError
}

var (
	_ driver.Conn               = (*safeConn)(nil)
	_ driver.ConnBeginTx        = (*safeConn)(nil)
	_ driver.ConnPrepareContext = (*safeConn)(nil)
	_ driver.ExecerContext      = (*safeConn)(nil)
	_ driver.NamedValueChecker  = (*safeConn)(nil)
	_ driver.SessionResetter    = (*safeConn)(nil)
	_ driver.Validator          = (*safeConn)(nil)
)

func (c *safeConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *safeConn) PrepareContext(ctx context.Context, query string) (s driver.Stmt, err error) {
	if c.broken.Load() {
		return nil, driver.ErrBadConn
	}
	defer recoverInto(&err, c)
	inner, err := c.c.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &safeStmt{s: inner, conn: c}, nil
}

func (c *safeConn) Close() (err error) {
	defer recoverInto(&err, c)
	return c.c.Close()
}

func (c *safeConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *safeConn) BeginTx(ctx context.Context, opts driver.TxOptions) (t driver.Tx, err error) {
	if c.broken.Load() {
		return nil, driver.ErrBadConn
	}
	defer recoverInto(&err, c)
	inner, err := c.c.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &safeTx{t: inner, conn: c}, nil
}

func (c *safeConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (r driver.Result, err error) {
	if c.broken.Load() {
		return nil, driver.ErrBadConn
	}
	e, ok := c.c.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	defer recoverInto(&err, c)
	return e.ExecContext(ctx, query, args)
}

func (c *safeConn) CheckNamedValue(arg *driver.NamedValue) error {
	if nc, ok := c.c.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(arg)
	}
	return driver.ErrSkip
}

func (c *safeConn) ResetSession(ctx context.Context) error {
	if c.broken.Load() {
		return driver.ErrBadConn
	}
	if r, ok := c.c.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *safeConn) IsValid() bool {
	if c.broken.Load() {
		return false
	}
	if v, ok := c.c.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// safeTx ends a transaction; a panic while ending it breaks the connection
// (so that database/sql closes it, which releases SQLite's locks).
type safeTx struct {
	t    driver.Tx
	conn *safeConn
}

func (t *safeTx) Commit() (err error) {
	if t.conn.broken.Load() {
		return driver.ErrBadConn
	}
	defer recoverInto(&err, t.conn)
	return t.t.Commit()
}

func (t *safeTx) Rollback() (err error) {
	if t.conn.broken.Load() {
		// The connection is closed by database/sql; closing ends the
		// transaction inside SQLite.
		return driver.ErrBadConn
	}
	defer recoverInto(&err, t.conn)
	return t.t.Rollback()
}

type safeStmt struct {
	s    driver.Stmt
	conn *safeConn
}

var (
	_ driver.StmtExecContext   = (*safeStmt)(nil)
	_ driver.StmtQueryContext  = (*safeStmt)(nil)
	_ driver.NamedValueChecker = (*safeStmt)(nil)
)

func (s *safeStmt) Close() (err error) {
	defer recoverInto(&err, s.conn)
	return s.s.Close()
}

func (s *safeStmt) NumInput() int { return s.s.NumInput() }

func (s *safeStmt) Exec(args []driver.Value) (driver.Result, error) {
	return nil, errors.New("storage: Stmt.Exec without context is not used")
}

func (s *safeStmt) Query(args []driver.Value) (driver.Rows, error) {
	return nil, errors.New("storage: Stmt.Query without context is not used")
}

func (s *safeStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (r driver.Result, err error) {
	if s.conn.broken.Load() {
		return nil, driver.ErrBadConn
	}
	defer recoverInto(&err, s.conn)
	return s.s.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *safeStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (r driver.Rows, err error) {
	if s.conn.broken.Load() {
		return nil, driver.ErrBadConn
	}
	defer recoverInto(&err, s.conn)
	rows, err := s.s.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	return &safeRows{r: rows, conn: s.conn}, nil
}

func (s *safeStmt) CheckNamedValue(arg *driver.NamedValue) error {
	if nc, ok := s.s.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(arg)
	}
	return driver.ErrSkip
}

type safeRows struct {
	r    driver.Rows
	conn *safeConn
}

func (r *safeRows) Columns() []string { return r.r.Columns() }

func (r *safeRows) Close() (err error) {
	defer recoverInto(&err, r.conn)
	return r.r.Close()
}

func (r *safeRows) Next(dest []driver.Value) (err error) {
	defer recoverInto(&err, r.conn)
	return r.r.Next(dest) // io.EOF unwrapped: database/sql compares it
}
