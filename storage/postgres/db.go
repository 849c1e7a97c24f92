// Package postgres is the PostgreSQL implementation of core.Store: one
// database shared by every Bridge process of a team (several machines, CI
// runners), through github.com/jackc/pgx/v5's connection pool.
//
// It keeps the record as package storage (SQLite) does and passes the same
// conformance suite (core/storetest), with PostgreSQL's own means for what
// several processes need:
//
//   - Schema migrations run under a session-level advisory lock
//     (pg_advisory_lock), so any number of processes may open a fresh
//     database at once; each step is one transaction recorded in
//     bridge_migrations.
//   - Every write is one transaction at READ COMMITTED. A write to a
//     session's entries first locks the session's row (SELECT … FOR
//     UPDATE), so appends from every process are serialised per session:
//     sequence numbers are dense and in order, the head moves one append at
//     a time, and a native id is recorded once. Writers of different
//     sessions do not wait for each other. Update runs its function in one
//     transaction: all of it commits or none of it does. A write that
//     PostgreSQL aborts as a deadlock or a serialisation failure is retried
//     from the start when the store itself made the transaction (never
//     within Update, whose function the caller owns).
//   - ClaimPreview is one conditional UPDATE (executed_at IS NULL); the
//     row lock makes exactly one of any number of concurrent claims win.
//   - Search is PostgreSQL full-text search: each entry's searchable text
//     (the same text SQLite's index holds) is a tsvector column with a GIN
//     index, written in the append's transaction; Bridge's query syntax
//     (words, "phrases", OR, NOT, prefix*) is translated to to_tsquery
//     (search.go, docs/postgres.md).
//
// Connection strings are postgres:// URLs or key=value strings as libpq
// reads them (sslmode, sslrootcert and the other TLS options pass through
// pgx's parsing). No error of this package contains the password.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// Options tunes Open. The zero value is ready to use.
type Options struct {
	// MaxEntryBytes bounds the payload of one entry, as storage.Options's
	// does; 0 means DefaultMaxEntryBytes, a negative value no limit.
	MaxEntryBytes int
	// IDs makes the ids of sessions and entries stored without one
	// (default core.DefaultIDs).
	IDs *core.IDs
	// SearchTimeout bounds one search; 0 means DefaultSearchTimeout.
	SearchTimeout time.Duration
	// MaxConns bounds the pool's connections; 0 means 8.
	MaxConns int32
}

// DefaultMaxEntryBytes is the default Options.MaxEntryBytes (storage's).
const DefaultMaxEntryBytes = 32 << 20

// DefaultSearchTimeout is the default Options.SearchTimeout.
const DefaultSearchTimeout = 10 * time.Second

// DB is a Bridge record in a PostgreSQL database. It implements core.Store
// and the other ports storage.DB implements, and is safe for concurrent use
// by goroutines and processes.
type DB struct {
	pool          *pgxpool.Pool
	password      string
	where         string // the URL without its password, for messages
	now           func() time.Time
	ids           *core.IDs
	maxEntry      int
	searchTimeout time.Duration

	// walkInGo makes branched pages be read by the Go walker alone, as
	// before branchWalk (tests compare the two).
	walkInGo bool

	// lists caches sessions' evidence lists (window.go).
	lists record.ListCache

	// afterCommit hooks run after a transaction that appended entries
	// commits, with the sessions it appended to (see OnAppend).
	hookMu      sync.RWMutex
	afterCommit []func(sessionIDs []string)

	closeOnce sync.Once
}

var (
	_ core.Store           = (*DB)(nil)
	_ core.Searcher        = (*DB)(nil)
	_ core.Dumper          = (*DB)(nil)
	_ core.UsageLedger     = (*DB)(nil)
	_ core.RepoStore       = (*DB)(nil)
	_ core.DiscoveryLog    = (*DB)(nil)
	_ core.WindowReader    = (*DB)(nil)
	_ core.PreviewStore    = (*DB)(nil)
	_ core.Writer          = (*txWriter)(nil)
	_ core.Restorer        = (*restorer)(nil)
	_ core.AttachmentStore = (*DB)(nil)
)

// Open connects to the database url names, applies pending migrations
// (under an advisory lock, so several processes may open it at once) and
// returns the store. A database migrated by a newer Bridge is a
// CodeUnsupported error; a URL that does not parse is CodeInvalid; a
// server that cannot be reached or refuses the login is CodeUnavailable.
// No error contains the password.
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	if strings.TrimSpace(url) == "" {
		return nil, core.Errorf(core.CodeInvalid, "postgres: the connection string is empty")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx names the string in its message; keep only what it says
		// is wrong, with any password removed.
		return nil, core.Errorf(core.CodeInvalid, "postgres: the connection string does not parse: %s", scrub(parseReason(err, url), passwordOf(url)))
	}
	password := cfg.ConnConfig.Password
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	} else {
		cfg.MaxConns = 8
	}
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "bridge"
	}
	// Times are Unix nanoseconds in bigint columns, so the session's time
	// zone never matters; UTC keeps the server's logs readable.
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	if opts.MaxEntryBytes == 0 {
		opts.MaxEntryBytes = DefaultMaxEntryBytes
	}
	if opts.IDs == nil {
		opts.IDs = core.DefaultIDs
	}
	if opts.SearchTimeout <= 0 {
		opts.SearchTimeout = DefaultSearchTimeout
	}
	db := &DB{
		password:      password,
		where:         Redact(url),
		now:           func() time.Time { return time.Now().UTC() },
		ids:           opts.IDs,
		maxEntry:      opts.MaxEntryBytes,
		searchTimeout: opts.SearchTimeout,
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, db.connErr("connect", err)
	}
	db.pool = pool
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, db.connErr("connect", err)
	}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

// Pool is the connection pool, for the parts of Bridge that need
// PostgreSQL itself (session leases, LISTEN/NOTIFY). Writing the record's
// tables through it bypasses every check of the record.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Where is the database's URL without its password, for messages.
func (db *DB) Where() string { return db.where }

// OnAppend registers fn, called after each transaction that appended
// entries commits, with the ids of the sessions it appended to (each
// once). fn runs on the committing goroutine and must not block.
func (db *DB) OnAppend(fn func(sessionIDs []string)) {
	db.hookMu.Lock()
	defer db.hookMu.Unlock()
	db.afterCommit = append(db.afterCommit, fn)
}

func (db *DB) fireAppended(ids []string) {
	if len(ids) == 0 {
		return
	}
	db.hookMu.RLock()
	hooks := db.afterCommit
	db.hookMu.RUnlock()
	for _, fn := range hooks {
		fn(ids)
	}
}

// Close closes the pool. It is safe to call more than once.
func (db *DB) Close() error {
	db.closeOnce.Do(func() { db.pool.Close() })
	return nil
}

// SchemaVersion implements core.Store: the highest applied migration.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v *int
	if err := db.pool.QueryRow(ctx, `SELECT max(version) FROM bridge_migrations`).Scan(&v); err != nil {
		return 0, db.errf(err, "schema version")
	}
	if v == nil {
		return 0, nil
	}
	return *v, nil
}

// querier is what reads and writes need: the pool, a connection or a
// transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// read runs fn in one read-only REPEATABLE READ transaction, so that a
// read of several statements sees one snapshot.
func (db *DB) read(ctx context.Context, fn func(q querier) error) error {
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return db.errf(err, "begin read")
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read-only
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return db.errf(err, "end read")
	}
	return nil
}

// write runs fn in one write transaction made by the store, retrying it
// from the start when PostgreSQL aborts it as a deadlock or a
// serialisation failure (another process's transaction won).
func (db *DB) write(ctx context.Context, fn func(w *txWriter) error) error {
	for attempt := 0; ; attempt++ {
		err := db.update(ctx, fn)
		if err == nil || !retryable(err) || attempt >= 8 || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		}
	}
}

// Update implements core.Store: fn's writes commit together, or none does
// when fn returns an error (returned unchanged) or panics. w must not be
// used after fn returns.
func (db *DB) Update(ctx context.Context, fn func(w core.Writer) error) error {
	return db.update(ctx, func(w *txWriter) error { return fn(w) })
}

func (db *DB) update(ctx context.Context, fn func(w *txWriter) error) (err error) {
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return db.errf(err, "begin")
	}
	w := &txWriter{db: db, tx: tx}
	committed := false
	defer func() {
		w.gate.Close()
		if !committed {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err := fn(w); err != nil {
		return err
	}
	w.gate.Close()
	if err := tx.Commit(ctx); err != nil {
		return db.errf(err, "commit")
	}
	committed = true
	db.fireAppended(w.appended)
	return nil
}

// retryable reports a deadlock (40P01) or serialisation failure (40001).
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// errf wraps a database error: "postgres: what: cause", with the password
// scrubbed from the text, a cancelled context as CodeCancelled and a lost
// connection as CodeUnavailable.
func (db *DB) errf(err error, what string, args ...any) error {
	msg := "postgres: " + fmt.Sprintf(what, args...)
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return core.E(core.CodeCancelled, msg, &scrubbed{err, db.password})
	case isConnErr(err):
		return core.E(core.CodeUnavailable, msg+" ("+db.where+")", &scrubbed{err, db.password})
	}
	return &scrubbed{fmt.Errorf("%s: %w", msg, err), db.password}
}

func (db *DB) connErr(what string, err error) error {
	return core.E(core.CodeUnavailable, "postgres: "+what+" to "+db.where, &scrubbed{err, db.password})
}

func isConnErr(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

// scrubbed is an error whose text never holds the password.
type scrubbed struct {
	err      error
	password string
}

func (e *scrubbed) Error() string { return scrub(e.err.Error(), e.password) }
func (e *scrubbed) Unwrap() error { return e.err }

func scrub(s, password string) string {
	if password == "" {
		return s
	}
	return strings.ReplaceAll(s, password, "xxxxx")
}
