package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"

	"github.com/ncruces/go-sqlite3"
)

// Options tunes Open. The zero value is ready to use.
type Options struct {
	// BusyTimeout is how long a statement waits for a lock held by another
	// connection or process before failing; 0 means 10 seconds.
	BusyTimeout time.Duration

	// Hook, when set, is called inside write transactions right after each
	// statement succeeds, with the name of the point reached:
	//
	//	"session.insert"  a session row was inserted (CreateSession)
	//	"session.update"  head fields were changed (PatchSession)
	//	"entry.insert"    one entry row was inserted (Append, AppendTo)
	//	"session.head"    the head moved after an append, or by MoveHead
	//	"audit.insert"    an audit record was inserted
	//	"commit.before"   the transaction is about to commit
	//
	// It exists for crash tests: a test process can exit at the Nth point
	// and check that the reopened database holds all of the transaction or
	// none of it. Hook runs while the write lock is held; it must not call
	// back into the DB.
	Hook func(point string)

	// MaxEntryBytes bounds the payload of one entry; a larger one fails its
	// call with a CodeInvalid error naming the limit, before SQLite sees it.
	// 0 means DefaultMaxEntryBytes; a negative value means no limit (for
	// tests of what lies behind the limit).
	MaxEntryBytes int

	// FullSync makes every commit wait until the data reaches the disk
	// (synchronous=FULL); the default (NORMAL) is crash-safe for the
	// process but a power cut may lose the last commits.
	FullSync bool

	// IDs makes the ids of sessions and entries stored without one
	// (default core.DefaultIDs).
	IDs *core.IDs

	// SearchTimeout bounds the time one search may run (its ranking and
	// page); past it the query is interrupted and refused as too costly.
	// 0 means DefaultSearchTimeout.
	SearchTimeout time.Duration

	// SearchLater makes Open return without opening the search index file
	// (<record>-search, created and set up in a write transaction of its
	// own): the indexer's goroutine opens it right after. The record is
	// ready at once; Search, CatchUpSearch and AfterBulk wait for the index,
	// and return the reason when it could not be opened. Bridge's commands
	// use it: `bridge serve` answers initialize without waiting for the index.
	SearchLater bool

	// IndexHook is Hook for the search indexer's transactions (which run
	// on their own goroutine, in the index file): "index.insert" after each
	// index row, "index.commit.before" before each commit.
	IndexHook func(point string)
}

// DefaultMaxEntryBytes is the default Options.MaxEntryBytes: 32 MiB, well
// below what the SQLite driver can hold for one statement (a row of about
// 200 MB exhausts a connection's memory).
const DefaultMaxEntryBytes = 32 << 20

// DB is a Bridge record in one SQLite file. It implements core.Store and is
// safe for concurrent use.
type DB struct {
	sql  *sql.DB
	path string
	hook func(string)
	now  func() time.Time
	ids  *core.IDs

	// noIndex turns off the search indexer (benchmarks measure what the
	// index costs).
	noIndex atomic.Bool
	// noLinks: appends write no entry_links rows (benchmarks measure what
	// the rows cost; history pages then walk).
	noLinks atomic.Bool

	busy      time.Duration // Options.BusyTimeout resolved
	indexHook func(string)
	search    *searchIndex

	maxEntry int // Options.MaxEntryBytes resolved; <= 0: no limit

	searchTimeout time.Duration // Options.SearchTimeout resolved

	// writeMu serialises this process's write transactions, so that they
	// queue in Go instead of polling SQLite's busy handler.
	writeMu sync.Mutex

	// groups and calls count write transactions of the writer and the
	// calls they carried (group commit at work when calls > groups).
	groups, calls atomic.Int64
	queued        atomic.Int64 // calls handed to the writer goroutine
	feedLooks     atomic.Int64 // FollowAppends' looks (one each FollowPoll)
	feedReads     atomic.Int64 // FollowAppends' reads of the entries table

	// lists caches sessions' evidence lists (record.ListCache).
	lists record.ListCache

	// wstmts are the writer pool's prepared statements; reads go to rd,
	// a read-only pool opened on the first read (readpool.go).
	wstmts *stmtCache
	rd     readPool

	// own notes this process's appends while a follower runs (feed.go).
	own ownAppends
	// origin marks the session changes this open writes (sessionfeed.go).
	origin string

	lastWrite    atomic.Int64 // Unix ns of the last commit (see checkpointer)
	checkpointed atomic.Int64 // lastWrite as of the last checkpoint
	// ckpt serialises this process's checkpoints: SQLite refuses a second
	// checkpoint at once with SQLITE_BUSY without waiting, so AfterBulk's
	// TRUNCATE would fail while the background checkpointer's PASSIVE runs.
	ckpt            sync.Mutex
	stopCheckpoints chan struct{} // closed by Close
	checkpointsDone chan struct{} // closed when the checkpointer returns

	// lockWaits counts busy timeouts the writer waited out (another
	// process held the write lock; see beginWaiting).
	lockWaits   atomic.Int64
	closing     chan struct{} // closed when Close starts
	closingOnce sync.Once

	closeMu sync.RWMutex
	closed  bool
	reqs    chan *writeReq
	done    chan struct{}
}

var _ core.Store = (*DB)(nil)

// Open opens (creating if needed) the database at path, applies pending
// migrations and starts the writer. The folder holding path is created with
// mode 0700 and the database files are given mode 0600 whatever the umask.
// Opening a database written by a newer Bridge (a schema version this one
// does not know) fails with a CodeUnsupported error.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if path == "" {
		return nil, core.Errorf(core.CodeInvalid, "storage: database path is empty")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("storage: resolve %s: %w", path, err)
	}
	if err := ensureFiles(abs); err != nil {
		return nil, err
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 10 * time.Second
	}
	syncMode := "normal"
	if opts.FullSync {
		syncMode = "full"
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "journal_mode(wal)")
	q.Add("_pragma", "foreign_keys(on)")
	q.Add("_pragma", "synchronous("+syncMode+")")
	// Commits never run a checkpoint (its fsync stalled the writer for
	// milliseconds); checkpointer does it in the background instead.
	q.Add("_pragma", "wal_autocheckpoint(0)")
	// Once a checkpoint has copied the whole log, the next write starts it
	// again from the top and cuts the file back to this size, so the -wal
	// file does not stay at the size a burst of writing left it.
	q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", JournalSizeLimit))
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", OmitHost: true, Path: abs, RawQuery: q.Encode()}).String()

	// Every connection gets FTS5 (see registerExtensions), and every call
	// into the driver is guarded against its panics (see safeDriverName).
	sdb, err := sql.Open(safeDriverName, dsn)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", abs, err)
	}
	sdb.SetMaxOpenConns(8)
	sdb.SetMaxIdleConns(8)
	sdb.SetConnMaxIdleTime(0)
	sdb.SetConnMaxLifetime(0)

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
		sql:           sdb,
		path:          abs,
		hook:          opts.Hook,
		busy:          busy,
		indexHook:     opts.IndexHook,
		now:           func() time.Time { return time.Now().UTC() },
		ids:           opts.IDs,
		maxEntry:      opts.MaxEntryBytes,
		searchTimeout: opts.SearchTimeout,
		reqs:          make(chan *writeReq, 256),
		wstmts:        newStmtCache(sdb),
		rd:            readPool{dsn: readDSN(abs, busy.Milliseconds())},
		origin:        newOrigin(),
		done:          make(chan struct{}),
		closing:       make(chan struct{}),
	}
	if err := db.migrateRetrying(ctx); err != nil {
		sdb.Close()
		return nil, err
	}
	// The first connection created -wal and -shm; make them private too.
	if err := chmodFiles(abs); err != nil {
		sdb.Close()
		return nil, err
	}
	if err := db.openSearch(ctx, opts.SearchLater); err != nil {
		sdb.Close()
		return nil, err
	}
	go db.writer()
	db.stopCheckpoints = make(chan struct{})
	db.checkpointsDone = make(chan struct{})
	go db.checkpointer(checkpointEvery)
	return db, nil
}

// The background checkpointer looks at the WAL every checkpointEvery and
// copies it into the database once writing has paused that long, or when
// checkpointAtLeast has passed since the last copy during sustained writing.
const (
	checkpointEvery   = 250 * time.Millisecond
	checkpointAtLeast = 60 * time.Second
)

// checkpointer copies the write-ahead log into the database file with a
// PASSIVE checkpoint, which never waits for readers. It waits for a pause
// in writing: measured here, a checkpoint during a burst of commits (a
// harness streaming events) delayed them by milliseconds, while commits
// that run no checkpoint stay well under one.
func (db *DB) checkpointer(period time.Duration) {
	defer close(db.checkpointsDone)
	t := time.NewTicker(period)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-db.stopCheckpoints:
			return
		case now := <-t.C:
			mark := db.lastWrite.Load()
			if mark == db.checkpointed.Load() {
				continue // nothing written since the last checkpoint
			}
			idle := now.Sub(time.Unix(0, mark)) >= period
			if !idle && now.Sub(last) < checkpointAtLeast {
				continue
			}
			db.ckpt.Lock()
			_, err := db.sql.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
			db.ckpt.Unlock()
			if err != nil {
				continue // busy or closing: the next tick tries again
			}
			db.checkpointed.Store(mark)
			last = now
		}
	}
}

// JournalSizeLimit is the size the write-ahead log is cut back to when
// SQLite restarts it after a complete checkpoint (PRAGMA
// journal_size_limit). While a burst of writing goes on the log may grow
// past it (the checkpointer waits for a pause); AfterBulk truncates it to
// nothing after an import.
const JournalSizeLimit = 32 << 20

// AfterBulk runs after a bulk write (an import): it brings the search
// index up to the record, then a TRUNCATE checkpoint copies the whole
// write-ahead log into the database and truncates the log file to zero
// bytes. It waits up to the busy timeout for other writers
// and for readers of older snapshots; when it cannot finish (a reader
// still holds an old snapshot), the background checkpointer copies the log
// later and journal_size_limit bounds the file then.
func (db *DB) AfterBulk(ctx context.Context) error {
	if db.isClosed() {
		return errClosed
	}
	// The indexer would index the bulk write next anyway: done here, its
	// memory is given back with the import's (the caller frees after).
	if !db.noIndex.Load() && db.search != nil {
		if err := db.CatchUpSearch(ctx); err != nil {
			return err
		}
	}
	db.ckpt.Lock()
	defer db.ckpt.Unlock()
	// Another process's checkpoint makes SQLite answer busy at once
	// (without its busy handler): try again until the busy timeout.
	deadline := time.Now().Add(db.busy)
	for {
		var busy, logFrames, done int
		if err := db.sql.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &done); err != nil {
			return fmt.Errorf("storage: checkpoint: %w", err)
		}
		if busy == 0 {
			break
		}
		if time.Now().After(deadline) {
			return core.Errorf(core.CodeUnavailable, "storage: checkpoint could not finish (%d of %d frames copied)", done, logFrames)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storage: checkpoint: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	db.checkpointed.Store(db.lastWrite.Load())
	return nil
}

// isBusy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED ("database
// is locked"), by its result code.
func isBusy(err error) bool {
	return errors.Is(err, sqlite3.BUSY) || errors.Is(err, sqlite3.LOCKED)
}

// migrateRetrying runs migrate, retrying while another process holds the
// lock that turning a new database to WAL mode needs: the connection
// pragmas (journal_mode among them) run before busy_timeout can help, so two
// Bridge processes creating the same database at once would otherwise see
// "database is locked".
func (db *DB) migrateRetrying(ctx context.Context) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := db.migrate(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storage: open %s: %w", db.path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ensureFiles creates the parent folder (0700) and the database file (0600).
func ensureFiles(abs string) error {
	dir := filepath.Dir(abs)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("storage: create folder %s: %w", dir, err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("storage: chmod %s: %w", dir, err)
		}
	} else if err != nil {
		return fmt.Errorf("storage: stat %s: %w", dir, err)
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("storage: create %s: %w", abs, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("storage: create %s: %w", abs, err)
	}
	return chmodFiles(abs)
}

// chmodFiles gives the database and its -wal/-shm companions mode 0600.
func chmodFiles(abs string) error {
	for _, p := range []string{abs, abs + "-wal", abs + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("storage: chmod %s: %w", p, err)
		}
	}
	return nil
}

// Path is the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// SQL exposes the underlying database handle, for tests and diagnostics.
// Writing through it bypasses every check of the record.
func (db *DB) SQL() *sql.DB { return db.sql }

// Close stops the writer (pending writes finish first) and closes the
// database. It is safe to call more than once.
func (db *DB) Close() error {
	// First, and without closeMu: a write waiting out another process's
	// lock may hold closeMu's read side (submit's fast path).
	db.closingOnce.Do(func() { close(db.closing) })
	db.closeMu.Lock()
	if db.closed {
		db.closeMu.Unlock()
		return nil
	}
	db.closed = true
	close(db.reqs)
	db.closeMu.Unlock()
	<-db.done
	db.stopSearch()
	close(db.stopCheckpoints)
	<-db.checkpointsDone
	rerr := db.closeReaders()
	db.closeStmts()
	if err := db.sql.Close(); err != nil {
		return fmt.Errorf("storage: close: %w", err)
	}
	return rerr
}

func (db *DB) fire(point string) {
	if point == "commit.before" {
		db.lastWrite.Store(time.Now().UnixNano())
	}
	if db.hook != nil {
		db.hook(point)
	}
}

// Update runs fn in one write transaction: everything fn writes through w
// commits together, and nothing does if fn returns an error (which Update
// returns unchanged) or panics. w must not be used after fn returns, and fn
// must not call write methods of db itself (they would wait for this
// transaction to end).
func (db *DB) Update(ctx context.Context, fn func(w core.Writer) error) (err error) {
	if db.isClosed() {
		return errClosed
	}
	db.writeMu.Lock()
	defer db.writeMu.Unlock()
	tx, err := db.beginWaiting(ctx, func() bool { return ctx.Err() == nil })
	if tx == nil {
		if err == nil {
			err = core.E(core.CodeCancelled, "storage: write cancelled while another process held the database's write lock", ctx.Err())
		}
		return err
	}
	w := &txWriter{db: db, tx: tx, q: newStmtTx(db, tx)}
	own := db.own.begin(ctx, tx)
	committed := false
	defer func() {
		w.gate.Close()
		if !committed {
			_ = tx.Rollback()
		}
	}()
	if err := fn(w); err != nil {
		return err
	}
	w.gate.Close()
	own.end(ctx, tx)
	db.fire("commit.before")
	if err := tx.Commit(); err != nil {
		own.failed()
		return fmt.Errorf("storage: commit: %w", err)
	}
	committed = true
	db.kickIndex()
	return nil
}

// beginWaiting begins a write transaction (BEGIN IMMEDIATE). When another
// process holds the write lock past the busy timeout (a large `bridge
// import` runs as one transaction), it does not give up: what this process
// was about to write stays in hand and it waits again, for as long as
// wanted reports that a caller still waits and the database is not
// closing. Dropping the writes instead would lose a live session's events.
// It returns a nil Tx and a nil error when wanted said no.
func (db *DB) beginWaiting(ctx context.Context, wanted func() bool) (*sql.Tx, error) {
	for {
		tx, err := db.sql.BeginTx(ctx, nil)
		if err == nil {
			return tx, nil
		}
		if !isBusy(err) {
			return nil, fmt.Errorf("storage: begin: %w", err)
		}
		db.lockWaits.Add(1)
		select {
		case <-db.closing:
			return nil, core.E(core.CodeUnavailable, "storage: closing while another process held the database's write lock", err)
		default:
		}
		if !wanted() {
			return nil, nil
		}
	}
}

var errClosed = core.Errorf(core.CodeUnavailable, "storage: database is closed")

func (db *DB) isClosed() bool {
	db.closeMu.RLock()
	defer db.closeMu.RUnlock()
	return db.closed
}
