package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

const sessionCols = `id, harness, cwd, title, preset, model, effort, native_session_id, head_id,
	restore_mode, latest_checkpoint_id, archived, last_status, created_at, updated_at`

func scanSession(sc pgx.Row) (core.Session, error) {
	var s core.Session
	var created, updated int64
	err := sc.Scan(&s.ID, &s.Harness, &s.Cwd, &s.Title, &s.Preset, &s.Model, &s.Effort, &s.NativeSessionID,
		&s.HeadID, &s.RestoreMode, &s.LatestCheckpointID, &s.Archived, &s.LastStatus, &created, &updated)
	s.CreatedAt, s.UpdatedAt = record.Unix(created), record.Unix(updated)
	return s, err
}

// getSession reads a session's head record; with lock it locks the row
// until the transaction ends.
func getSession(ctx context.Context, db *DB, q querier, id string, lock bool) (core.Session, error) {
	query := `SELECT ` + sessionCols + ` FROM sessions WHERE id = $1`
	if lock {
		query += ` FOR UPDATE`
	}
	s, err := scanSession(q.QueryRow(ctx, query, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return core.Session{}, core.NotFound("session", id)
	}
	if err != nil {
		return core.Session{}, db.errf(err, "get session %s", id)
	}
	return s, nil
}

// GetSession implements core.Store.
func (db *DB) GetSession(ctx context.Context, id string) (core.Session, error) {
	return getSession(ctx, db, db.pool, id, false)
}

// ListSessions implements core.Store: most recently updated first (ties by
// id, descending), archived sessions only with IncludeArchived. Each page
// is an index range scan from the cursor on.
func (db *DB) ListSessions(ctx context.Context, q core.ListQuery) ([]core.Session, string, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if !q.IncludeArchived {
		where = append(where, "archived = false")
	}
	if q.Harness != "" {
		where = append(where, "harness = "+arg(q.Harness))
	}
	if q.Cursor != "" {
		upd, id, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, "", err
		}
		where = append(where, "(updated_at, id) < ("+arg(upd)+", "+arg(id)+")")
	}
	query := `SELECT ` + sessionCols + ` FROM sessions`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY updated_at DESC, id DESC LIMIT ` + arg(limit+1)
	rows, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, "", db.errf(err, "list sessions")
	}
	defer rows.Close()
	out := []core.Session{}
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, "", db.errf(err, "list sessions")
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, "", db.errf(err, "list sessions")
	}
	out, next := record.CutPage(out, limit)
	return out, next, nil
}

// decodeCursor is record.DecodeCursor, refusing an id this store cannot
// hold (a NUL).
func decodeCursor(c string) (int64, string, error) {
	upd, id, err := record.DecodeCursor(c)
	if err == nil && strings.IndexByte(id, 0) >= 0 {
		return 0, "", core.Errorf(core.CodeInvalid, "session list cursor %q is not valid", c)
	}
	return upd, core.ValidText(id), err
}

// FindSessionByNative implements core.Store; when several sessions share
// the native id, the most recently updated wins.
func (db *DB) FindSessionByNative(ctx context.Context, harness, nativeID string) (core.Session, error) {
	if nativeID == "" {
		return core.Session{}, core.NotFound("native session", nativeID)
	}
	s, err := scanSession(db.pool.QueryRow(ctx, `SELECT `+sessionCols+` FROM sessions
		WHERE harness = $1 AND native_session_id = $2 ORDER BY updated_at DESC, id DESC LIMIT 1`, txt(harness), txt(nativeID)))
	if errors.Is(err, pgx.ErrNoRows) {
		return core.Session{}, core.NotFound(harness+" native session", nativeID)
	}
	if err != nil {
		return core.Session{}, db.errf(err, "find native session %s", nativeID)
	}
	return s, nil
}

const entryCols = `id, session_id, parent_id, seq, kind, payload, native_id, token_estimate, created_at`

// entryRow holds nullable scan targets for one entry row.
type entryRow struct {
	id, session, parent, kind, payload, native *string
	seq, tokens, created                       *int64
}

func (r *entryRow) dest() []any {
	return []any{&r.id, &r.session, &r.parent, &r.seq, &r.kind, &r.payload, &r.native, &r.tokens, &r.created}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func num(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func (r *entryRow) entry() core.Entry {
	return core.Entry{
		ID: str(r.id), SessionID: str(r.session), ParentID: str(r.parent), Seq: num(r.seq),
		Kind: core.Kind(str(r.kind)), Payload: []byte(str(r.payload)), NativeID: str(r.native),
		TokenEstimate: num(r.tokens), CreatedAt: record.Unix(num(r.created)),
	}
}

// GetEntry implements core.Store.
func (db *DB) GetEntry(ctx context.Context, id string) (core.Entry, error) {
	var r entryRow
	err := db.pool.QueryRow(ctx, `SELECT `+entryCols+` FROM entries WHERE id = $1`, txt(id)).Scan(r.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return core.Entry{}, core.NotFound("entry", id)
	}
	if err != nil {
		return core.Entry{}, db.errf(err, "get entry %s", id)
	}
	return r.entry(), nil
}

// Audit implements core.Store.
func (db *DB) Audit(ctx context.Context, entity, kind string) ([]core.AuditRecord, error) {
	return audit(ctx, db, db.pool, entity, kind)
}

func audit(ctx context.Context, db *DB, q querier, entity, kind string) ([]core.AuditRecord, error) {
	where := []string{"true"}
	var args []any
	if entity != "" {
		args = append(args, txt(entity))
		where = append(where, "entity = $"+strconv.Itoa(len(args)))
	}
	if kind != "" {
		args = append(args, txt(kind))
		where = append(where, "kind = $"+strconv.Itoa(len(args)))
	}
	rows, err := q.Query(ctx, `SELECT id, source, kind, entity, body, time FROM audit WHERE `+
		strings.Join(where, " AND ")+` ORDER BY id`, args...)
	if err != nil {
		return nil, db.errf(err, "audit")
	}
	defer rows.Close()
	out := []core.AuditRecord{}
	for rows.Next() {
		var r core.AuditRecord
		var body string
		var t int64
		if err := rows.Scan(&r.ID, &r.Source, &r.Kind, &r.Entity, &body, &t); err != nil {
			return nil, db.errf(err, "audit")
		}
		r.Body, r.Time = []byte(body), record.Unix(t)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, db.errf(err, "audit")
	}
	return out, nil
}

// chainSQL reads a session's entries newest first from a seq down.
const chainSQL = `SELECT ` + entryCols + ` FROM entries WHERE session_id = $1 AND seq <= $2 ORDER BY seq DESC LIMIT $3`

// scanChain reads the entries of a session that has never branched
// newest first from fromSeq down by seq, checked as one chain
// (record.ScanChain).
func scanChain(ctx context.Context, db *DB, q querier, sessionID, firstID string, fromSeq int64, batch int, fn func(core.Entry) bool) (ok bool, err error) {
	batch = min(max(batch, 16), 1024)
	return record.ScanChain(firstID, fromSeq, batch, func(upper int64, visit func(core.Entry) bool) (int, error) {
		return visitRows(ctx, db, q, sessionID, visit, chainSQL, sessionID, upper, batch)
	}, fn)
}

// visitRows runs a query of entries of session sessionID and hands each
// row to visit until it returns false; it returns how many rows it read.
func visitRows(ctx context.Context, db *DB, q querier, sessionID string, visit func(core.Entry) bool, query string, args ...any) (int, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return 0, db.errf(err, "read session %s", sessionID)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var r entryRow
		if err := rows.Scan(r.dest()...); err != nil {
			return n, db.errf(err, "read session %s", sessionID)
		}
		n++
		if !visit(r.entry()) {
			break
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return n, db.errf(err, "read session %s", sessionID)
	}
	return n, nil
}

// walkSQL follows parent links from $1 for at most $2 steps, reading
// each entry once (its columns carried through the recursion). The walk
// stops at a root, at an id that does not exist (fewer than $2 rows, the
// last with a parent: that parent is missing; no row: $1 is) or after $2
// rows (which bounds it on a cycle).
const walkSQL = `WITH RECURSIVE w AS (
	SELECT ` + entryCols + `, 0 AS n FROM entries WHERE id = $1
	UNION ALL
	SELECT e.id, e.session_id, e.parent_id, e.seq, e.kind, e.payload, e.native_id, e.token_estimate, e.created_at, w.n + 1
	FROM w JOIN entries e ON e.id = w.parent_id WHERE w.n + 1 < $2
)
SELECT ` + entryCols + ` FROM w ORDER BY n`

// newWalker is a record.Walker of the session reading by walkSQL.
func newWalker(db *DB, q querier, sessionID string) *record.Walker {
	return record.NewWalker(sessionID, func(ctx context.Context, from string, batch int) ([]core.Entry, string, error) {
		var buf []core.Entry
		_, err := visitRows(ctx, db, q, sessionID, func(e core.Entry) bool {
			buf = append(buf, e)
			return true
		}, walkSQL, from, batch)
		switch {
		case err != nil:
			return nil, "", err
		case len(buf) == 0:
			return nil, from, nil
		case len(buf) < batch && buf[len(buf)-1].ParentID != "":
			return buf, buf[len(buf)-1].ParentID, nil
		}
		return buf, "", nil
	})
}

// ActiveBranch implements core.Store: the entries from the root to the
// head, in order, read in one snapshot.
func (db *DB) ActiveBranch(ctx context.Context, sessionID string) ([]core.Entry, error) {
	var out []core.Entry
	err := db.read(ctx, func(q querier) (err error) {
		out, err = activeBranch(ctx, db, q, sessionID)
		return err
	})
	return out, err
}

func activeBranch(ctx context.Context, db *DB, q querier, sessionID string) ([]core.Entry, error) {
	st, err := loadState(ctx, db, q, sessionID)
	if err != nil {
		return nil, err
	}
	if st.headID == "" {
		return []core.Entry{}, nil
	}
	var chain func(fn func(core.Entry) bool) (bool, error)
	if !st.branched && st.headSeq != nil {
		chain = func(fn func(core.Entry) bool) (bool, error) {
			return scanChain(ctx, db, q, sessionID, st.headID, *st.headSeq, 1024, fn)
		}
	}
	return record.ActiveBranch(chain, func(fn func(core.Entry) bool) error {
		return newWalker(db, q, sessionID).Walk(ctx, st.headID, true, 1024, fn)
	})
}

// DefaultHistoryMessages is the page size History uses when asked for
// maxMessages <= 0.
const DefaultHistoryMessages = 60

// History implements core.Store, as storage's does: an unbranched session
// is read by seq (only the page), a branched one by walking parent links
// from the head (a page far from the head of a branched session costs a
// walk to it, done inside the server by branchWalk; SQLite's store keeps
// jump pointers for that, this one does not yet).
func (db *DB) History(ctx context.Context, sessionID string, beforeSeq int64, maxMessages int) (entries []core.Entry, hasMore bool, err error) {
	if maxMessages <= 0 {
		maxMessages = DefaultHistoryMessages
	}
	err = db.read(ctx, func(q querier) error {
		entries, hasMore, err = history(ctx, db, q, sessionID, beforeSeq, maxMessages)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return entries, hasMore, nil
}

func history(ctx context.Context, db *DB, q querier, sessionID string, beforeSeq int64, maxMessages int) ([]core.Entry, bool, error) {
	st, err := loadState(ctx, db, q, sessionID)
	if err != nil {
		return nil, false, err
	}
	return historyOf(ctx, db, q, sessionID, st, beforeSeq, maxMessages)
}

// historyOf is history on the session's state as read already.
func historyOf(ctx context.Context, db *DB, q querier, sessionID string, st sessionState, beforeSeq int64, maxMessages int) ([]core.Entry, bool, error) {
	if st.headID == "" {
		return []core.Entry{}, false, nil
	}
	if st.headSeq == nil {
		return nil, false, core.Errorf(core.CodeCorrupt, "session %s: head %q does not exist", sessionID, st.headID)
	}
	batch := min(2*maxMessages+16, 1024)
	page := record.NewPage(maxMessages)
	if !st.branched {
		fromSeq, firstID := *st.headSeq, st.headID
		if beforeSeq > 0 && beforeSeq <= fromSeq {
			fromSeq, firstID = beforeSeq-1, ""
		}
		ok, err := scanChain(ctx, db, q, sessionID, firstID, fromSeq, batch, page.Collect)
		if err != nil {
			return nil, false, err
		}
		if ok {
			out, hasMore := page.Done()
			return out, hasMore, nil
		}
		page.Reset()
	}
	start, w, err := branchBefore(ctx, db, q, sessionID, st, beforeSeq)
	if err != nil || start == "" {
		return []core.Entry{}, false, err
	}
	if err := w.Walk(ctx, start, start == st.headID, batch, page.Collect); err != nil {
		return nil, false, err
	}
	out, hasMore := page.Done()
	return out, hasMore, nil
}

// branchBefore finds where a walk back along the active branch starts for
// the entries with seq < beforeSeq (0: from the head), by a walk from the
// head (inside the server, branchWalk; by the Go walker when its links are
// not sound), and the walker to walk on with; start is "" when the branch
// has no such entry.
func branchBefore(ctx context.Context, db *DB, q querier, sessionID string, st sessionState, beforeSeq int64) (start string, w *record.Walker, err error) {
	w = newWalker(db, q, sessionID)
	if beforeSeq <= 0 || beforeSeq > *st.headSeq {
		return st.headID, w, nil
	}
	_, at, ok, err := branchWalk(ctx, db, q, sessionID, st, beforeSeq-1)
	if err != nil {
		return "", nil, err
	}
	if ok {
		return at, w, nil
	}
	if start, err = w.EntryBefore(ctx, st.headID, beforeSeq); err != nil {
		return "", nil, err
	}
	return start, newWalker(db, q, sessionID), nil
}

// forwardSQL reads a session's entries oldest first from a seq up to
// another.
const forwardSQL = `SELECT ` + entryCols + ` FROM entries WHERE session_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq LIMIT $4`

// HistoryAfter implements core.Store, as storage's does: an unbranched
// session is read by seq upwards (only the page); a branched one by one
// walk back from the head (inside the server, branchWalk; by
// record.ForwardFromHead when its links are not sound; as with History, a
// page far from the head of a branched session costs a walk to it here).
func (db *DB) HistoryAfter(ctx context.Context, sessionID string, afterSeq int64, maxMessages int) (entries []core.Entry, hasNewer bool, err error) {
	if maxMessages <= 0 {
		maxMessages = DefaultHistoryMessages
	}
	err = db.read(ctx, func(q querier) error {
		entries, hasNewer, err = historyAfter(ctx, db, q, sessionID, afterSeq, maxMessages)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return entries, hasNewer, nil
}

// HistoryAround implements core.Store: the page around entry entryID, in
// one snapshot (record.Around; on a branched session one walk from the
// head, inside the server: aroundInServer, else record.AroundFromHead).
func (db *DB) HistoryAround(ctx context.Context, sessionID, entryID string, maxMessages int) (entries []core.Entry, hasMore, hasNewer bool, err error) {
	if maxMessages <= 0 {
		maxMessages = DefaultHistoryMessages
	}
	err = db.read(ctx, func(q querier) error {
		st, err := loadState(ctx, db, q, sessionID)
		if err != nil {
			return err
		}
		var r entryRow
		err = q.QueryRow(ctx, `SELECT `+entryCols+` FROM entries WHERE id = $1`, txt(entryID)).Scan(r.dest()...)
		if errors.Is(err, pgx.ErrNoRows) {
			return core.NotFound("entry", entryID)
		}
		if err != nil {
			return db.errf(err, "get entry %s", entryID)
		}
		if st.branched && st.headID != "" && st.headSeq != nil {
			// Each half would walk from the head: one walk reads both,
			// inside the server when the links it walks are sound.
			var ok bool
			entries, hasMore, hasNewer, ok, err = aroundInServer(ctx, db, q, sessionID, st, r.entry(), maxMessages)
			if ok || err != nil {
				return err
			}
			entries, hasMore, hasNewer, err = record.AroundFromHead(sessionID, r.entry(), maxMessages, *st.headSeq,
				func(fn func(core.Entry) bool) error {
					return newWalker(db, q, sessionID).Walk(ctx, st.headID, true, 1024, fn)
				})
			return err
		}
		entries, hasMore, hasNewer, err = record.Around(ctx, sessionID, r.entry(), maxMessages,
			func(ctx context.Context, beforeSeq int64, max int) ([]core.Entry, bool, error) {
				return historyOf(ctx, db, q, sessionID, st, beforeSeq, max)
			},
			func(ctx context.Context, afterSeq int64, max int) ([]core.Entry, bool, error) {
				return historyAfterOf(ctx, db, q, sessionID, st, afterSeq, max)
			})
		return err
	})
	if err != nil {
		return nil, false, false, err
	}
	return entries, hasMore, hasNewer, nil
}

// errUnsound stops a walk whose links are not what a fast path needs.
var errUnsound = errors.New("unsound links")

// aroundInServer is HistoryAround's page on a branched session from one
// walk inside the server (branchWalk) down to the entry, and a walk of the
// page's older half from it; ok is false when a link walked is not sound,
// and then the caller reads the page by the Go walker from the head
// (record.AroundFromHead), which names the problem.
func aroundInServer(ctx context.Context, db *DB, q querier, sessionID string, st sessionState, e core.Entry, maxMessages int) (entries []core.Entry, hasMore, hasNewer, ok bool, err error) {
	if e.SessionID != sessionID {
		return nil, false, false, false, nil
	}
	half, newerMax := record.AroundHalves(maxMessages)
	runs, at, ok, err := branchWalk(ctx, db, q, sessionID, st, e.Seq)
	if err != nil || !ok {
		return nil, false, false, false, err
	}
	newer := record.NewForwardPage(newerMax, *st.headSeq)
	if at == e.ID {
		if err := readRuns(ctx, db, q, sessionID, runs, e.Seq, min(2*newerMax+16, 1024), newer.Collect); err != nil {
			return nil, false, false, false, err
		}
	}
	tail, _ := newer.Done()
	entries, hasMore, hasNewer, err = record.AroundFromStop(sessionID, e, maxMessages, *st.headSeq, tail, at,
		func(fn func(core.Entry) bool) error {
			// An entry at or above e's seq may be one the walk from the
			// head passed (a cycle through it), which this walker has
			// not seen: the walk from the head reads that page.
			unsound := false
			err := newWalker(db, q, sessionID).Walk(ctx, e.ID, false, min(2*half+16, 1024), func(x core.Entry) bool {
				if x.ID != e.ID && x.Seq >= e.Seq {
					unsound = true
					return false
				}
				return fn(x)
			})
			if err == nil && unsound {
				err = errUnsound
			}
			return err
		})
	if errors.Is(err, errUnsound) || core.ErrorCode(err) == core.CodeCorrupt {
		return nil, false, false, false, nil // the walk from the head names it as before
	}
	return entries, hasMore, hasNewer, true, err
}

func historyAfter(ctx context.Context, db *DB, q querier, sessionID string, afterSeq int64, maxMessages int) ([]core.Entry, bool, error) {
	st, err := loadState(ctx, db, q, sessionID)
	if err != nil {
		return nil, false, err
	}
	return historyAfterOf(ctx, db, q, sessionID, st, afterSeq, maxMessages)
}

// historyAfterOf is historyAfter on the session's state as read already.
func historyAfterOf(ctx context.Context, db *DB, q querier, sessionID string, st sessionState, afterSeq int64, maxMessages int) ([]core.Entry, bool, error) {
	if st.headID == "" {
		return []core.Entry{}, false, nil
	}
	if st.headSeq == nil {
		return nil, false, core.Errorf(core.CodeCorrupt, "session %s: head %q does not exist", sessionID, st.headID)
	}
	headSeq := *st.headSeq
	page := record.NewForwardPage(maxMessages, headSeq)
	if !st.branched {
		batch := min(2*maxMessages+16, 1024)
		ok, err := record.ScanForward(afterSeq, headSeq, batch, func(lower int64, visit func(core.Entry) bool) (int, error) {
			return visitRows(ctx, db, q, sessionID, visit, forwardSQL, sessionID, lower, headSeq, batch)
		}, page.Collect)
		if err != nil {
			return nil, false, err
		}
		if ok {
			out, hasNewer := page.Done()
			return out, hasNewer, nil
		}
		page.Reset() // not one sound chain: the walk names the problem
	}
	// Without jump pointers every window of record.ForwardWindows would
	// start with a walk from the head: one walk reads the page instead,
	// inside the server (branchWalk) when the links it walks are sound.
	runs, _, ok, err := branchWalk(ctx, db, q, sessionID, st, afterSeq)
	if err != nil {
		return nil, false, err
	}
	if ok {
		if err := readRuns(ctx, db, q, sessionID, runs, afterSeq, min(2*maxMessages+16, 1024), page.Collect); err != nil {
			return nil, false, err
		}
		out, hasNewer := page.Done()
		return out, hasNewer, nil
	}
	err = record.ForwardFromHead(afterSeq, page, func(fn func(core.Entry) bool) error {
		return newWalker(db, q, sessionID).Walk(ctx, st.headID, true, int(min(headSeq-afterSeq+1, 1024)), fn)
	})
	if err != nil {
		return nil, false, err
	}
	out, hasNewer := page.Done()
	return out, hasNewer, nil
}

// Integrity implements core.Store: each session's active branch is walked
// and every parent link is checked (it must name an existing, older entry
// of the same session); one problem is reported per unsound session.
func (db *DB) Integrity(ctx context.Context) (core.IntegrityReport, error) {
	rep := core.IntegrityReport{Problems: []core.IntegrityProblem{}}
	err := db.read(ctx, func(q querier) error {
		var ids []string
		rows, err := q.Query(ctx, `SELECT id FROM sessions ORDER BY id`)
		if err != nil {
			return db.errf(err, "integrity")
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return db.errf(err, "integrity")
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return db.errf(err, "integrity")
		}
		bad, err := record.CheckBranches(&rep, ids, func(id string) error {
			_, err := activeBranch(ctx, db, q, id)
			return err
		})
		if err != nil {
			return err
		}
		rows, err = q.Query(ctx, `SELECT e.session_id, e.id, e.parent_id, p.id, p.session_id, e.seq, p.seq
			FROM entries e LEFT JOIN entries p ON p.id = e.parent_id
			WHERE e.parent_id IS NOT NULL AND (p.id IS NULL OR p.session_id <> e.session_id OR p.seq >= e.seq)
			ORDER BY e.session_id, e.seq`)
		if err != nil {
			return db.errf(err, "integrity")
		}
		defer rows.Close()
		for rows.Next() {
			var sid, id, parent string
			var pid, psid *string
			var seq int64
			var pseq *int64
			if err := rows.Scan(&sid, &id, &parent, &pid, &psid, &seq, &pseq); err != nil {
				return db.errf(err, "integrity")
			}
			if bad[sid] {
				continue
			}
			msg := record.BadLink{SessionID: sid, ID: id, Parent: parent, Seq: seq,
				ParentFound: pid != nil, ParentSession: str(psid), ParentSeq: num(pseq)}.Problem()
			rep.Problems = append(rep.Problems, core.IntegrityProblem{SessionID: sid, Problem: msg})
			bad[sid] = true
		}
		if err := rows.Err(); err != nil {
			return db.errf(err, "integrity")
		}
		if err := q.QueryRow(ctx, `SELECT count(*) FROM entries`).Scan(&rep.EntriesChecked); err != nil {
			return db.errf(err, "integrity")
		}
		return nil
	})
	return rep, err
}
