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

	"github.com/ncruces/go-sqlite3"
	sqlite "github.com/ncruces/go-sqlite3/driver"
)

// The search index lives in its own SQLite file next to the record
// (<record>-search, with its own -wal and -shm), written by an indexer
// that follows the record instead of inside each append's transaction.
//
// Why a second file: FTS5 in the WebAssembly build of SQLite the driver
// uses costs more CPU per entry than the whole rest of an append (about
// 10 µs against 9 µs for a message of 35 words, measured; see
// BENCHMARKS.md), so an index written by the append itself can never keep
// ingest above 0.6× of ingest without it. SQLite has one write lock per
// file: in a separate file the indexer writes at the same time as the
// record's writer, on the other core, and in large batches (which costs
// FTS5 less per entry than the record's batches do).
//
// Why a crash never leaves search behind the record: the index file holds,
// in search_state and in the same transaction as its rows, the rowid of the
// last entry it covers (indexed_to). Entries are never deleted and a new
// entry's rowid is above every committed one (see TestEntryRowidsIncrease),
// so "every entry with rowid <= indexed_to is indexed, none above it is"
// holds after any crash. Search first brings the index up to the record's
// newest entry as of the query (catchUp) and only then answers, so its
// results are never silently stale; a crash costs only the catch-up time.
//
// The index is derived data: when its file is missing, of another format,
// or does not match the record (its last indexed entry is not the record's
// entry at that rowid), it is emptied and rebuilt from the record.

// searchFormat is the shape of the index file; a file of another format is
// rebuilt.
const searchFormat = 1

// indexDelay is how long the indexer lets commits gather before it
// indexes them.
const indexDelay = 20 * time.Millisecond

// After mergeIdle without writes, the indexer merges the index's segments,
// mergePages pages (of about 4 KiB) per transaction.
const (
	mergeIdle  = 500 * time.Millisecond
	mergePages = 1000
)

// indexBatchEntries and indexBatchBytes bound one index transaction.
const (
	indexBatchEntries = 5000
	indexBatchBytes   = 8 << 20
)

const searchSchema = `
CREATE TABLE IF NOT EXISTS search_state (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    format     INTEGER NOT NULL,
    -- every entry of the record with rowid <= indexed_to is indexed
    indexed_to INTEGER NOT NULL,
    -- id of the record's entry at rowid indexed_to ('' when 0)
    last_entry TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS entry_search USING fts5(
    text,
    content = '',
    tokenize = 'unicode61 remove_diacritics 2'
);`

// searchIndex is the index file and its indexer.
type searchIndex struct {
	path string
	w    *sql.DB // one connection: index writes (BEGIN IMMEDIATE)
	r    *sql.DB // searches, with the record attached read-only as "rec"

	mu      sync.Mutex  // one catch-up at a time in this process
	checked bool        // the index was checked against the record (under mu)
	ready   atomic.Bool // checked, readable without mu

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	err  atomic.Pointer[error] // last failure of the background indexer

	// opened is closed once the file is open (w and r set) or could not
	// be opened (openErr set): at once when Open opened it, later when
	// the indexer opens it (Options.SearchLater).
	opened  chan struct{}
	openErr error
}

// searchPath is the index file of the record at abs.
func searchPath(abs string) string { return abs + "-search" }

// openSearch opens (creating if needed) the index file of db and starts
// its indexer, which first catches up with what the record holds. With
// later, the indexer's goroutine opens the file instead, after Open has
// returned; whatever needs the index waits for that (ix.wait) and a failure
// to open it is returned by each of them.
func (db *DB) openSearch(ctx context.Context, later bool) error {
	ix := &searchIndex{path: searchPath(db.path), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), opened: make(chan struct{})}
	if !later {
		if err := ix.openFile(ctx, db); err != nil {
			return err
		}
		close(ix.opened)
	}
	db.search = ix
	go db.indexer(later)
	ix.kick <- struct{}{}
	return nil
}

// openFile opens the index file; a file SQLite cannot read is replaced,
// once (the index is derived data).
func (ix *searchIndex) openFile(ctx context.Context, db *DB) error {
	err := ix.open(ctx, db)
	if err == nil {
		return nil
	}
	ix.close()
	if !errors.Is(err, sqlite3.NOTADB) && !errors.Is(err, sqlite3.CORRUPT) {
		return err
	}
	for _, p := range []string{ix.path, ix.path + "-wal", ix.path + "-shm"} {
		if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return fmt.Errorf("storage: replace unreadable search index %s: %w (after %w)", ix.path, rerr, err)
		}
	}
	if err := ix.open(ctx, db); err != nil {
		ix.close()
		return err
	}
	return nil
}

// openLater is the indexer's first step under Options.SearchLater: it
// opens the file and tells those waiting (wait) how that went.
func (ix *searchIndex) openLater(db *DB) {
	defer close(ix.opened)
	if err := ix.openFile(context.Background(), db); err != nil {
		ix.openErr = fmt.Errorf("storage: the search index could not be opened: %w", err)
		ix.err.Store(&ix.openErr)
	}
}

// wait returns once the index file is open, or the reason it could not be
// opened. A search or a catch-up waits here while the indexer opens the
// file (Options.SearchLater); ctx ends the wait.
func (ix *searchIndex) wait(ctx context.Context) error {
	select {
	case <-ix.opened:
		return ix.openErr
	default:
	}
	select {
	case <-ix.opened:
		return ix.openErr
	case <-ctx.Done():
		return fmt.Errorf("storage: waiting for the search index to open: %w", ctx.Err())
	}
}

// isOpen tells, without waiting, whether the index file is open.
func (ix *searchIndex) isOpen() bool {
	select {
	case <-ix.opened:
		return ix.openErr == nil
	default:
		return false
	}
}

func (ix *searchIndex) open(ctx context.Context, db *DB) error {
	if err := ensureFiles(ix.path); err != nil {
		return err
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", db.busy.Milliseconds()))
	q.Add("_pragma", "journal_mode(wal)")
	q.Add("_pragma", "synchronous(normal)")
	// As for the record: the log is cut back to this size when SQLite
	// restarts it (a bulk write's index transaction can grow it far).
	q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", JournalSizeLimit))
	q.Set("_txlock", "immediate")
	w, err := openPool(ix.path, q, nil)
	if err != nil {
		return err
	}
	w.SetMaxOpenConns(1)
	ix.w = w
	// As for the record (migrateRetrying): another process creating the
	// same file at the same moment holds the lock that turning it to WAL
	// mode needs, before busy_timeout can help.
	deadline := time.Now().Add(db.busy)
	for {
		err := ix.setup(ctx)
		if err == nil {
			break
		}
		if !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storage: open %s: %w", ix.path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := chmodFiles(ix.path); err != nil {
		return err
	}
	q.Set("_txlock", "deferred")
	rec := (&url.URL{Scheme: "file", OmitHost: true, Path: db.path, RawQuery: "mode=ro"}).String()
	r, err := openPool(ix.path, q, func(c *sqlite3.Conn) error {
		return c.Exec(`ATTACH DATABASE '` + sqlQuote(rec) + `' AS rec`)
	})
	if err != nil {
		return err
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	ix.r = r
	return nil
}

// sqlQuote doubles single quotes for a string literal.
func sqlQuote(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// openPool opens a pool of guarded connections (see safeDriverName) to
// path, running init on each new connection after the extensions.
func openPool(path string, q url.Values, init func(*sqlite3.Conn) error) (*sql.DB, error) {
	dsn := (&url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: q.Encode()}).String()
	c, err := (&sqlite.SQLite{}).OpenConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", path, err)
	}
	p := sql.OpenDB(safeConnector{c: c, init: init, dir: filepath.Dir(path)})
	p.SetConnMaxIdleTime(0)
	p.SetConnMaxLifetime(0)
	return p, nil
}

// setup creates the index tables, or empties them when the file holds
// another format.
func (ix *searchIndex) setup(ctx context.Context) error {
	tx, err := ix.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("storage: search index %s: %w", ix.path, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	var format int
	err = tx.QueryRowContext(ctx, `SELECT format FROM search_state`).Scan(&format)
	if err == nil && format != searchFormat {
		for _, q := range []string{`DROP TABLE IF EXISTS entry_search`, `DROP TABLE search_state`} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("storage: search index %s: rebuild: %w", ix.path, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, searchSchema); err != nil {
		return fmt.Errorf("storage: search index %s: %w", ix.path, err)
	}
	// Merge 16 segments of a level at a time (FTS5's default is 4): each
	// indexed token is then rewritten half as many times (measured: 12.5
	// -> 8.9 µs per entry over 200,000 entries in batches of 5,000); a
	// query reads a few more segments.
	// When writing pauses, the indexer merges further (mergeStep): every
	// level with two segments or more (usermerge 2), so that a query reads
	// few segments (measured over 1,000,000 entries: 19 segments, p99
	// 38.8 ms; one segment, 11 ms, same run).
	for _, q := range []string{`INSERT INTO entry_search (entry_search, rank) VALUES ('automerge', 16)`,
		`INSERT INTO entry_search (entry_search, rank) VALUES ('crisismerge', 64)`,
		`INSERT INTO entry_search (entry_search, rank) VALUES ('usermerge', 2)`} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("storage: search index %s: %w", ix.path, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO search_state (id, format, indexed_to, last_entry) VALUES (1, ?, 0, '')`,
		searchFormat); err != nil {
		return fmt.Errorf("storage: search index %s: %w", ix.path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("storage: search index %s: %w", ix.path, err)
	}
	return nil
}

func (ix *searchIndex) close() {
	if ix.r != nil {
		_ = ix.r.Close()
	}
	if ix.w != nil {
		_ = ix.w.Close()
	}
}

// kickIndex tells the indexer that the record has new entries.
func (db *DB) kickIndex() {
	if db.search == nil {
		return
	}
	select {
	case db.search.kick <- struct{}{}:
	default:
	}
}

// indexer is the goroutine that keeps the index up with the record, and
// merges its segments once writing pauses.
func (db *DB) indexer(open bool) {
	ix := db.search
	defer close(ix.done)
	if open {
		ix.openLater(db)
		if ix.openErr != nil {
			<-ix.stop
			return
		}
	}
	ctx := context.Background()
	merged := false
	for {
		var idle <-chan time.Time
		if !merged && !db.noIndex.Load() {
			idle = time.After(mergeIdle)
		}
		select {
		case <-ix.stop:
			return
		case <-idle:
			more, err := db.mergeStep(ctx)
			if err != nil {
				ix.err.Store(&err)
			}
			merged = err != nil || !more
			continue
		case <-ix.kick:
		}
		if db.noIndex.Load() {
			continue
		}
		// Let a few more commits come: FTS5 costs less per entry in large
		// batches (fewer segments to write and merge). Search does not wait
		// for this: it catches up itself.
		select {
		case <-ix.stop:
			return
		case <-time.After(indexDelay):
		}
		if err := db.catchUp(ctx, -1, ix.stop); err != nil {
			ix.err.Store(&err)
			continue // tried again at the next write or search
		}
		ix.err.Store(nil)
		merged = false
	}
}

// mergeStep merges segments of the index (up to mergePages pages written)
// in one transaction of the index file, and tells whether there may be more
// to merge. It runs when writing pauses; search never waits for it.
func (db *DB) mergeStep(ctx context.Context) (more bool, err error) {
	ix := db.search
	if err := ix.wait(ctx); err != nil {
		return false, err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	tx, err := ix.w.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("storage: search index: merge: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	var before, after int64
	if err := tx.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&before); err != nil {
		return false, fmt.Errorf("storage: search index: merge: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO entry_search (entry_search, rank) VALUES ('merge', ?)`, mergePages); err != nil {
		return false, fmt.Errorf("storage: search index: merge: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&after); err != nil {
		return false, fmt.Errorf("storage: search index: merge: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("storage: search index: merge: %w", err)
	}
	// FTS5: a merge that found nothing to do changes fewer than two rows.
	return after-before >= 2, nil
}

// SettleSearch catches the index up and merges it as the indexer does
// once writing pauses, returning when there is nothing left to merge. For
// benchmarks that measure search on a settled index.
func (db *DB) SettleSearch(ctx context.Context) error {
	if err := db.CatchUpSearch(ctx); err != nil {
		return err
	}
	for {
		more, err := db.mergeStep(ctx)
		if err != nil || !more {
			return err
		}
	}
}

// stopSearch stops the indexer after it has indexed what the record holds
// (so that a process that closes its database normally leaves the index
// complete) and closes the index file.
func (db *DB) stopSearch() {
	ix := db.search
	if ix == nil {
		return
	}
	close(ix.stop)
	<-ix.done
	if ix.openErr == nil && !db.noIndex.Load() {
		_ = db.catchUp(context.Background(), -1, nil)
	}
	ix.close()
}
