package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"

	"github.com/ncruces/go-sqlite3"

	"github.com/bridge-dev/bridge/core"
)

// A bulk write (UpdateBulk: an import) indexes its entries for search while
// it runs, on another goroutine (and so on the other core), instead of
// leaving them all to the indexer after its commit: the rows go into a
// transaction of the index file that is opened when the bulk write begins
// and committed only after the record's transaction has committed, with
// the high-water mark (search_state) in the same transaction.
//
// So the index is never ahead of the record: a search (which reads the
// committed index) cannot find an entry the record does not hold, a bulk
// write that rolls back rolls the index transaction back too, and a crash
// before the index commits leaves the index behind the record, which the
// catch-up brings up to date as after any crash (searchindex.go).
//
// The live transaction covers the entries the bulk write inserts after the
// record's newest committed entry (head): the indexer first catches up to
// head, then takes the index file's write lock and checks that its mark is
// head. Nothing else can add entries to the record meanwhile (the bulk
// write holds the record's write lock), so every entry with a rowid in
// (head, last handed] is the bulk write's; before the record commits, the
// writer checks that the record's newest rowid is the last one it handed
// over, and otherwise (an entry was inserted some other way) the index
// transaction is rolled back and left to the catch-up.

// liveQueue is how many batches of rows the writer may hand ahead of the
// live indexer before it waits for it. The indexer keeps up with the
// writer (it waits for rows most of the time), and every batch queued
// keeps its payloads alive: 2 rather than 4 lowered a 200 MB import's peak
// resident memory from about 66 to 61.5 MiB (median of four runs).
const liveQueue = 2

// liveRow is an entry a bulk write inserted, for the live indexer.
type liveRow struct {
	rowid   int64
	id      string
	kind    core.Kind
	payload []byte
}

// liveIndex is the live indexing of one bulk write.
type liveIndex struct {
	db     *DB
	head   int64 // the record's newest committed entry when the bulk write began
	in     chan []liveRow
	commit chan bool // after in is closed: whether the record committed
	done   chan struct{}
	err    error // the indexer's failure (read after done)

	decided, ok bool // the record's outcome, once read from commit (indexer only)

	buf  []liveRow // rows of the current Append, handed on success
	last int64     // rowid of the last row handed (head before any)
}

// startLive starts indexing the rows of a bulk write whose transaction tx
// has just begun (and holds the record's write lock). It returns nil when
// there is no index to keep (benchmarks without search) or the record's
// head cannot be read; the catch-up then indexes the bulk write after its
// commit, as for any other write.
func (db *DB) startLive(ctx context.Context, tx *sql.Tx) *liveIndex {
	if db.search == nil || !db.search.isOpen() || db.noIndex.Load() {
		return nil
	}
	var head sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(rowid) FROM entries`).Scan(&head); err != nil {
		return nil
	}
	li := &liveIndex{db: db, head: head.Int64, last: head.Int64,
		in: make(chan []liveRow, liveQueue), commit: make(chan bool, 1), done: make(chan struct{})}
	go li.run(context.WithoutCancel(ctx))
	return li
}

// add queues a row inserted by the current Append; send hands the queued
// rows to the indexer once the Append has succeeded, drop forgets them when
// it failed.
func (li *liveIndex) add(rowid int64, id string, kind core.Kind, payload []byte) {
	li.buf = append(li.buf, liveRow{rowid: rowid, id: id, kind: kind, payload: payload})
}

func (li *liveIndex) send() {
	if len(li.buf) == 0 {
		return
	}
	li.last = li.buf[len(li.buf)-1].rowid
	li.in <- li.buf
	li.buf = nil
}

func (li *liveIndex) drop() { li.buf = li.buf[:0] }

// complete tells whether the rows handed are every entry the transaction
// added: its newest entry is the last row handed.
func (li *liveIndex) complete(ctx context.Context, q querier) bool {
	var newest sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT max(rowid) FROM entries`).Scan(&newest); err != nil {
		return false
	}
	return newest.Int64 == li.last
}

// end tells the indexer whether the record committed and waits until the
// index transaction has committed (committed) or rolled back. A failure of
// the indexer is kept for the background indexer's report; the catch-up
// covers what it did not commit.
func (li *liveIndex) end(committed bool) {
	close(li.in)
	li.commit <- committed
	<-li.done
	if li.err != nil && li.db.search != nil {
		err := fmt.Errorf("storage: search index: live indexing: %w", li.err)
		li.db.search.err.Store(&err)
	}
}

// run is the live indexer's goroutine. On any failure it stops indexing
// (the rows still arriving are discarded) and rolls its transaction back.
func (li *liveIndex) run(ctx context.Context) {
	defer close(li.done)
	db, ix := li.db, li.db.search
	// Held until the index transaction ends: the background indexer and
	// the merges wait; searches that find the index caught up with the
	// record (as it is while the bulk write has not committed) do not.
	ix.mu.Lock()
	defer ix.mu.Unlock()
	drain := func() {
		for range li.in {
		}
		li.committed()
	}
	if err := db.catchUpLocked(ctx, li.head, nil); err != nil {
		li.err = err
		drain()
		return
	}
	conn, err := ix.w.Conn(ctx)
	if err != nil {
		li.err = err
		drain()
		return
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) (err error) {
		sc, ok := dc.(*safeConn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		defer recoverInto(&err, sc)
		err = li.index(sc.c.Raw())
		if sc.broken.Load() {
			return errors.Join(err, errDriverBroken)
		}
		return err
	})
	if err != nil {
		li.err = err
	}
	drain() // after a failure: the writer must never wait on a full queue
}

// committed waits for the record's outcome (after in is closed) and
// tells whether it committed.
func (li *liveIndex) committed() bool {
	if !li.decided {
		li.ok, li.decided = <-li.commit, true
	}
	return li.ok
}

// errDriverBroken marks a connection that panicked (database/sql then
// discards it).
var errDriverBroken = errors.New("storage: connection broken")

// index writes the rows handed in one transaction of c and commits it
// with the mark once the record has committed.
func (li *liveIndex) index(c *sqlite3.Conn) error {
	db := li.db
	if err := c.Exec(`BEGIN IMMEDIATE`); err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			_ = c.Exec(`ROLLBACK`)
		}
	}()
	mark, err := indexMark(c)
	if err != nil {
		return err
	}
	if mark != li.head {
		return fmt.Errorf("index covers rowid %d, the record's head is %d", mark, li.head)
	}
	ins, _, err := c.Prepare(`INSERT INTO entry_search (rowid, text) VALUES (?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	var last liveRow
	for rows := range li.in {
		for _, r := range rows {
			if text := SearchText(r.kind, r.payload); text != "" {
				if err := errors.Join(ins.BindInt64(1, r.rowid), ins.BindText(2, text)); err != nil {
					return err
				}
				if err := ins.Exec(); err != nil {
					return fmt.Errorf("index entry at rowid %d: %w", r.rowid, err)
				}
				db.fireIndex("index.insert")
			}
		}
		if len(rows) > 0 {
			last = rows[len(rows)-1]
		}
	}
	if !li.committed() || last.rowid == 0 {
		return nil // rolled back: the record did not commit, or added nothing
	}
	if err := db.commitMark(c, last.rowid, last.id); err != nil {
		return err
	}
	committed = true
	if walOver(db.search.path, JournalSizeLimit) {
		// The commit copied the log into the index file (SQLite's
		// automatic checkpoint); cut the file back too. Best effort: a
		// reader of an older snapshot keeps it for now.
		_ = c.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	}
	return nil
}

// UpdateBulk is Update for a bulk write (an import): the same one
// transaction, all or nothing, and in addition the entries it appends are
// indexed for search while it runs (see liveIndex) rather than after its
// commit. When it returns, a search finds what it committed without
// waiting for the indexer.
func (db *DB) UpdateBulk(ctx context.Context, fn func(w core.Writer) error) (err error) {
	if db.isClosed() {
		return errClosed
	}
	db.writeMu.Lock()
	defer db.writeMu.Unlock()
	// Its own connection, with foreign-key checks off for the
	// transaction: appendEntries already guarantees what they check (the
	// session was read, and each entry's parent is the head it read or
	// the entry it inserted just before), and they cost about a tenth of
	// the insert. They are on again before the connection goes back to the
	// pool; if that fails, the pool discards the connection.
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return fmt.Errorf("storage: begin: %w", err)
	}
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}()
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		return fmt.Errorf("storage: begin: %w", err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("storage: begin: %w", err)
	}
	w := &txWriter{db: db, tx: tx, q: newStmtTx(db, tx), conn: conn}
	defer w.closeFast() // before the connection's deferred release
	own := db.own.begin(ctx, tx)
	w.live = db.startLive(ctx, tx)
	committed := false
	defer func() {
		w.gate.Close()
		if !committed {
			_ = tx.Rollback()
		}
		if w.live != nil {
			w.live.end(committed)
		}
	}()
	if err := fn(w); err != nil {
		return err
	}
	w.gate.Close()
	if w.live != nil && !w.live.complete(ctx, w.q) {
		w.live.end(false) // left to the catch-up after the commit
		w.live = nil
	}
	own.end(ctx, tx)
	db.fire("commit.before")
	if err := tx.Commit(); err != nil {
		own.failed()
		return fmt.Errorf("storage: commit: %w", err)
	}
	committed = true
	db.kickIndex()
	if w.live != nil && walOver(db.path, JournalSizeLimit) {
		// While the index commits (on its goroutine), a log grown past its
		// bound is copied into the database: the truncating checkpoint
		// AfterBulk runs next then finds little or nothing left to do.
		// PASSIVE never waits (for readers of older snapshots: AfterBulk
		// does). Small bulk writes, such as discovering many short
		// sessions, leave it to AfterBulk once at the end.
		live := w.live
		w.live = nil
		done := make(chan struct{})
		go func() {
			defer close(done)
			live.end(true)
		}()
		db.ckpt.Lock()
		_, _ = db.sql.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`) // best effort: AfterBulk, the checkpointer retry
		db.ckpt.Unlock()
		<-done
	}
	return nil
}

// walOver tells whether the write-ahead log of the database at path is
// larger than limit bytes.
func walOver(path string, limit int64) bool {
	st, err := os.Stat(path + "-wal")
	return err == nil && st.Size() > limit
}
