package storage

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
)

var _ core.ChangeFeed = (*DB)(nil)

// FollowPoll is how often FollowAppends looks for entries other processes
// committed to the database file.
const FollowPoll = 200 * time.Millisecond

// FollowAppends implements core.ChangeFeed for several processes sharing
// one data directory: SQLite tells no one of a commit, so the follower
// looks every FollowPoll whether the file changed (PRAGMA data_version on
// a connection of its own: SQLite's change counter, no table read) and,
// when it did, for entries past the last one it saw (one query on the
// rowid, which grows with each commit: SQLite lets one process write at a
// time). It hands those another process wrote to fn, one session's run at
// a time, in order. This process's own entries are known by the rowid
// ranges its write transactions inserted (noted while a follower runs) and
// are left out. It returns ctx's error when ctx ends; a failed read is
// tried again at the next look.
func (db *DB) FollowAppends(ctx context.Context, fn func(entries []core.Entry)) error {
	id, seen, err := db.own.start(ctx, db)
	if err != nil {
		return err
	}
	defer db.own.stop(id)
	return db.everyChange(ctx, func() { db.feedLooks.Add(1) }, func() error {
		for {
			next, n, err := db.handOver(ctx, seen, fn)
			seen = next
			db.own.prune(id, seen)
			if err != nil || n == 0 {
				return err // nothing new (the next look), or a failed read
			}
		}
	})
}

// everyChange runs look every FollowPoll while ctx lasts, when the file
// changed since the last look (PRAGMA data_version) or the last look
// failed (its error: a failed read is tried again at the next look,
// whatever the counter says); tick, when not nil, counts every look. It
// returns ctx's error when ctx ends. It is the loop of both followers
// (appends and session changes).
func (db *DB) everyChange(ctx context.Context, tick func(), look func() error) error {
	ver := db.newVersionWatch()
	defer ver.close()
	t := time.NewTicker(FollowPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if tick != nil {
			tick()
		}
		if !ver.changed(ctx) {
			continue
		}
		if look() != nil {
			ver.forget()
		}
	}
}

// versionWatch tells a follower whether anyone committed to the file since
// it last looked: PRAGMA data_version on one connection of its own changes
// whenever another connection (of this process or another) commits.
type versionWatch struct {
	pool *sql.DB
	conn *sql.Conn
	last int64
	ok   bool // last is a value read since the last forget
}

func (db *DB) newVersionWatch() *versionWatch {
	w := &versionWatch{}
	if p, err := sql.Open(safeDriverName, db.rd.dsn); err == nil {
		p.SetMaxOpenConns(1)
		w.pool = p
	}
	return w
}

// changed reports whether the file changed since the last call (true the
// first time, and whenever the counter cannot be read: then the follower
// reads the entries as it would without the watch). The counter is read
// before the entries are, so a commit between the two is seen next time.
func (w *versionWatch) changed(ctx context.Context) bool {
	if w.pool == nil {
		return true
	}
	if w.conn == nil {
		c, err := w.pool.Conn(ctx)
		if err != nil {
			return true
		}
		w.conn = c
	}
	var v int64
	if err := w.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
		_ = w.conn.Close()
		w.conn, w.ok = nil, false
		return true
	}
	if w.ok && v == w.last {
		return false
	}
	w.last, w.ok = v, true
	return true
}

// forget makes the next call to changed report a change.
func (w *versionWatch) forget() { w.ok = false }

func (w *versionWatch) close() {
	if w.conn != nil {
		_ = w.conn.Close()
	}
	if w.pool != nil {
		_ = w.pool.Close()
	}
}

// followBatch is how many entries one look reads at most (it looks again
// at once while there are more).
const followBatch = 1000

// handOver reads up to followBatch entries after rowid seen, hands the
// other processes' ones to fn (each run of one session's as one call) and
// returns the last rowid it is done with and how many rows it read. After
// a failed read that is the last one handed over (or skipped as this
// process's): the rest is read again at the next look.
func (db *DB) handOver(ctx context.Context, seen int64, fn func([]core.Entry)) (int64, int, error) {
	rq, err := db.rq()
	if err != nil {
		return seen, 0, err
	}
	db.feedReads.Add(1)
	rows, err := rq.QueryContext(ctx, `SELECT rowid, `+entryCols+` FROM entries WHERE rowid > ? ORDER BY rowid LIMIT ?`, seen, followBatch)
	if err != nil {
		return seen, 0, err
	}
	defer rows.Close()
	var run []core.Entry
	done := seen // the last rowid handed over or skipped
	flush := func() {
		if len(run) > 0 {
			fn(run)
			run = nil
		}
		done = seen
	}
	n := 0
	for rows.Next() {
		var rowid int64
		var r entryRow
		if err := rows.Scan(append([]any{&rowid}, r.dest()...)...); err != nil {
			return done, n, err
		}
		e := r.entry()
		if mine := db.own.mine(rowid); mine || len(run) > 0 && run[0].SessionID != e.SessionID {
			flush()
			if mine {
				n, seen, done = n+1, rowid, rowid
				continue
			}
		}
		n++
		seen = rowid
		run = append(run, e)
	}
	if err := rows.Err(); err != nil {
		return done, n, err
	}
	flush()
	return done, n, nil
}

// ownAppends is what FollowAppends needs to tell this process's entries
// from others': while at least one follower runs, every write transaction
// notes the rowids it inserted, (lo, hi] (SQLite's write lock, taken when
// the transaction begins, keeps other processes' rows out of that range).
type ownAppends struct {
	mu     sync.Mutex
	next   int
	seen   map[int]int64 // each follower's last rowid read
	ranges [][2]int64    // (lo, hi], ascending
}

// start counts a follower in and returns the rowid it starts after. It
// holds the write lock of this process meanwhile, so that no transaction
// of this process is half noted: one that began before is committed, one
// after sees the follower.
func (o *ownAppends) start(ctx context.Context, db *DB) (int, int64, error) {
	db.writeMu.Lock()
	defer db.writeMu.Unlock()
	rq, err := db.rq()
	if err != nil {
		return 0, 0, err
	}
	var seen int64
	if err := rq.QueryRowContext(ctx, `SELECT coalesce(max(rowid), 0) FROM entries`).Scan(&seen); err != nil {
		return 0, 0, fmt.Errorf("storage: follow appends: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil {
		o.seen = map[int]int64{}
	}
	o.next++
	o.seen[o.next] = seen
	return o.next, seen, nil
}

func (o *ownAppends) stop(id int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.seen, id)
	o.pruneLocked()
}

// following reports whether a follower runs.
func (o *ownAppends) following() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.seen) > 0
}

// mine reports whether this process inserted the entry of rowid.
func (o *ownAppends) mine(rowid int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	i := sort.Search(len(o.ranges), func(i int) bool { return o.ranges[i][1] >= rowid })
	return i < len(o.ranges) && o.ranges[i][0] < rowid
}

// prune notes that follower id read up to rowid seen and forgets the
// ranges every follower has read past.
func (o *ownAppends) prune(id int, seen int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen[id] = seen
	o.pruneLocked()
}

func (o *ownAppends) pruneLocked() {
	if len(o.seen) == 0 {
		o.ranges = nil
		return
	}
	low := int64(-1)
	for _, s := range o.seen {
		if low < 0 || s < low {
			low = s
		}
	}
	i := sort.Search(len(o.ranges), func(i int) bool { return o.ranges[i][1] > low })
	o.ranges = o.ranges[i:]
}

// ownMark notes one write transaction's rowids: begin after the
// transaction began, end just before it commits (the range is noted then,
// so that no follower reads a committed row of it before), failed when the
// commit failed (before the rollback: until then no other process can
// write, and so reuse those rowids).
type ownMark struct {
	o      *ownAppends
	lo, hi int64
	on     bool
}

type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (o *ownAppends) begin(ctx context.Context, tx rowQuerier) ownMark {
	m := ownMark{o: o}
	if o.following() && tx.QueryRowContext(context.WithoutCancel(ctx), `SELECT coalesce(max(rowid), 0) FROM entries`).Scan(&m.lo) == nil {
		m.on = true
	}
	return m
}

func (m *ownMark) end(ctx context.Context, tx rowQuerier) {
	if !m.on {
		return
	}
	if tx.QueryRowContext(context.WithoutCancel(ctx), `SELECT coalesce(max(rowid), 0) FROM entries`).Scan(&m.hi) != nil || m.hi <= m.lo {
		m.on = false
		return
	}
	m.o.mu.Lock()
	defer m.o.mu.Unlock()
	if len(m.o.seen) == 0 {
		m.on = false
		return
	}
	m.o.ranges = append(m.o.ranges, [2]int64{m.lo, m.hi})
}

func (m *ownMark) failed() {
	if !m.on {
		return
	}
	m.o.mu.Lock()
	defer m.o.mu.Unlock()
	for i, r := range m.o.ranges {
		if r == [2]int64{m.lo, m.hi} {
			m.o.ranges = append(m.o.ranges[:i], m.o.ranges[i+1:]...)
			break
		}
	}
	m.on = false
}
