package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ncruces/go-sqlite3"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// Catching the search index up with the record (searchindex.go says why
// it is a file of its own): the batches the indexer writes, and the mark
// that says how far it got.

// recordHead is the rowid of the record's newest entry (0 when empty).
func (db *DB) recordHead(ctx context.Context) (int64, error) {
	var head sql.NullInt64
	if err := db.sql.QueryRowContext(ctx, `SELECT max(rowid) FROM entries`).Scan(&head); err != nil {
		return 0, fmt.Errorf("storage: search: read the record: %w", err)
	}
	return head.Int64, nil
}

// CatchUpSearch indexes every entry the record holds now and returns once
// the search index covers them. Search does this itself before answering;
// it is exported for benchmarks and tools that measure or need a complete
// index.
func (db *DB) CatchUpSearch(ctx context.Context) error {
	if db.isClosed() {
		return errClosed
	}
	return db.catchUp(ctx, 0, nil)
}

// catchUp indexes entries in batches until the index covers the record's
// newest entry as of the call (target 0), or as of each batch (target -1:
// the background indexer follows a record that keeps growing). stop, when
// closed, ends it between batches.
func (db *DB) catchUp(ctx context.Context, target int64, stop <-chan struct{}) error {
	ix := db.search
	if err := ix.wait(ctx); err != nil {
		return err
	}
	if target == 0 && ix.isCaughtUp(ctx, db) {
		// Nothing to index: a search does not wait for the indexer's
		// merging (which holds mu).
		return nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return db.catchUpLocked(ctx, target, stop)
}

// catchUpLocked is catchUp for a caller holding the index's mu.
func (db *DB) catchUpLocked(ctx context.Context, target int64, stop <-chan struct{}) error {
	ix := db.search
	if !ix.checked {
		if err := db.checkIndex(ctx); err != nil {
			return err
		}
		ix.checked = true
		ix.ready.Store(true)
	}
	if target == 0 {
		head, err := db.recordHead(ctx)
		if err != nil {
			return err
		}
		target = head
	}
	for {
		if stop != nil {
			select {
			case <-stop:
				return nil
			default:
			}
		}
		done, err := db.indexBatch(ctx, target)
		if err != nil || done {
			return err
		}
	}
}

// isCaughtUp reports whether the index, once checked against the record,
// covers the record's newest entry (false when unsure).
func (ix *searchIndex) isCaughtUp(ctx context.Context, db *DB) bool {
	if !ix.ready.Load() {
		return false
	}
	head, err := db.recordHead(ctx)
	if err != nil {
		return false
	}
	var to int64
	if err := ix.r.QueryRowContext(ctx, `SELECT indexed_to FROM search_state`).Scan(&to); err != nil {
		return false
	}
	return to >= head
}

// searchKindList is record.SearchKinds() as an SQL list of string literals.
var searchKindList = func() string {
	var ks []string
	for _, k := range record.SearchKinds() {
		ks = append(ks, "'"+sqlQuote(string(k))+"'")
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}()

type pendingEntry struct {
	rowid int64
	id    string
	text  string
}

// indexBatch indexes the next batch of entries after indexed_to (up to
// target when target > 0) in one transaction of the index file. done is
// true when there was nothing left to index.
func (db *DB) indexBatch(ctx context.Context, target int64) (done bool, err error) {
	ix := db.search
	var from int64
	if err := ix.w.QueryRowContext(ctx, `SELECT indexed_to FROM search_state`).Scan(&from); err != nil {
		return false, fmt.Errorf("storage: search index: %w", err)
	}
	if target > 0 && from >= target {
		return true, nil
	}
	// Read the batch from the record (a read transaction: the record's
	// writer is not held up).
	// Payloads of kinds without searchable text (raw harness events can be
	// large) are not read.
	cols := `SELECT rowid, id, kind, CASE WHEN kind IN (` + searchKindList + `) THEN payload END FROM entries`
	query := cols + ` WHERE rowid > ? ORDER BY rowid LIMIT ?`
	args := []any{from, indexBatchEntries}
	if target > 0 {
		query = cols + ` WHERE rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?`
		args = []any{from, target, indexBatchEntries}
	}
	var batch []pendingEntry
	var last pendingEntry
	size := 0
	rows, err := db.sql.QueryContext(ctx, query, args...)
	if err != nil {
		return false, fmt.Errorf("storage: search index: read the record: %w", err)
	}
	for rows.Next() {
		var kind string
		var payload sql.RawBytes
		if err := rows.Scan(&last.rowid, &last.id, &kind, &payload); err != nil {
			rows.Close()
			return false, fmt.Errorf("storage: search index: read the record: %w", err)
		}
		if text := SearchText(core.Kind(kind), payload); text != "" {
			batch = append(batch, pendingEntry{rowid: last.rowid, text: text})
			size += len(text)
		}
		if size >= indexBatchBytes {
			break
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("storage: search index: read the record: %w", err)
	}
	if last.rowid == 0 {
		return true, nil
	}
	// The rows go in through the connection itself, not database/sql:
	// about a microsecond less per entry, and the index costs FTS5 enough.
	conn, err := ix.w.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("storage: search index: %w", err)
	}
	defer conn.Close()
	// A batch another process indexed first is skipped (writeBatch
	// reports it); the next one starts from that process's mark.
	err = conn.Raw(func(dc any) (err error) {
		sc, ok := dc.(*safeConn)
		if !ok {
			return fmt.Errorf("storage: search index: unexpected driver connection %T", dc)
		}
		defer recoverInto(&err, sc)
		_, err = db.writeBatch(sc.c.Raw(), from, batch, last)
		if sc.broken.Load() {
			return driver.ErrBadConn
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("storage: search index: %w", err)
	}
	return false, nil
}

// indexMark reads the index's high-water mark (the last record rowid it
// covers) on c, inside the caller's transaction.
func indexMark(c *sqlite3.Conn) (int64, error) {
	st, _, err := c.Prepare(`SELECT indexed_to FROM search_state`)
	if err != nil {
		return 0, err
	}
	var mark int64
	if st.Step() {
		mark = st.ColumnInt64(0)
	}
	return mark, errors.Join(st.Err(), st.Close())
}

// writeBatch writes one batch of index rows and the new mark in one
// transaction of c, unless the mark is no longer from (another process
// indexed these entries meanwhile; raced is then true and nothing is
// written).
func (db *DB) writeBatch(c *sqlite3.Conn, from int64, batch []pendingEntry, last pendingEntry) (raced bool, err error) {
	if err := c.Exec(`BEGIN IMMEDIATE`); err != nil {
		return false, err
	}
	committed := false
	defer func() {
		if !committed {
			_ = c.Exec(`ROLLBACK`)
		}
	}()
	now, err := indexMark(c)
	if err != nil {
		return false, err
	}
	if now != from {
		return true, nil
	}
	ins, _, err := c.Prepare(`INSERT INTO entry_search (rowid, text) VALUES (?, ?)`)
	if err != nil {
		return false, err
	}
	defer ins.Close()
	for _, e := range batch {
		if err := errors.Join(ins.BindInt64(1, e.rowid), ins.BindText(2, e.text)); err != nil {
			return false, err
		}
		if err := ins.Exec(); err != nil {
			return false, fmt.Errorf("index entry at rowid %d: %w", e.rowid, err)
		}
		db.fireIndex("index.insert")
	}
	if err := db.commitMark(c, last.rowid, last.id); err != nil {
		return false, err
	}
	committed = true
	return false, nil
}

// commitMark sets the index's high-water mark (the rowid and id of the last
// entry it covers) in c's transaction and commits it with the rows written.
func (db *DB) commitMark(c *sqlite3.Conn, rowid int64, id string) error {
	up, _, err := c.Prepare(`UPDATE search_state SET indexed_to = ?, last_entry = ?`)
	if err != nil {
		return err
	}
	defer up.Close()
	if err := errors.Join(up.BindInt64(1, rowid), up.BindText(2, id), up.Exec()); err != nil {
		return err
	}
	db.fireIndex("index.commit.before")
	return c.Exec(`COMMIT`)
}

// checkIndex empties the index when it does not match the record: its last
// indexed entry is not the record's entry at that rowid (the record file
// was replaced, or rewritten with other rowids).
func (db *DB) checkIndex(ctx context.Context) error {
	ix := db.search
	var to int64
	var last string
	if err := ix.w.QueryRowContext(ctx, `SELECT indexed_to, last_entry FROM search_state`).Scan(&to, &last); err != nil {
		return fmt.Errorf("storage: search index: %w", err)
	}
	if to == 0 {
		return nil
	}
	var id string
	err := db.sql.QueryRowContext(ctx, `SELECT id FROM entries WHERE rowid = ?`, to).Scan(&id)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("storage: search index: read the record: %w", err)
	}
	if id == last {
		return nil
	}
	tx, err := ix.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("storage: search index: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	for _, q := range []string{`INSERT INTO entry_search (entry_search) VALUES ('delete-all')`,
		`UPDATE search_state SET indexed_to = 0, last_entry = ''`} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("storage: search index: reset: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("storage: search index: reset: %w", err)
	}
	return nil
}

func (db *DB) fireIndex(point string) {
	if db.indexHook != nil {
		db.indexHook(point)
	}
}
