package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// walkSQL follows parent links from ?1 for at most ?2 steps. A row whose
// entry columns are NULL names an id that does not exist; the walk stops
// there, at a root, or after ?2 rows (which bounds it on a cycle).
const walkSQL = `WITH RECURSIVE w(id, n) AS (
	SELECT ?1, 0
	UNION ALL
	SELECT e.parent_id, w.n + 1 FROM w JOIN entries e ON e.id = w.id
	WHERE e.parent_id IS NOT NULL AND w.n + 1 < ?2
)
SELECT w.id, e.id, e.session_id, e.parent_id, e.seq, e.kind, e.payload, e.native_id, e.token_estimate, e.created_at
FROM w LEFT JOIN entries e ON e.id = w.id ORDER BY w.n`

// newWalker is a record.Walker of the session reading by walkSQL.
func newWalker(q querier, sessionID string) *record.Walker {
	return record.NewWalker(sessionID, func(ctx context.Context, from string, batch int) ([]core.Entry, string, error) {
		rows, err := q.QueryContext(ctx, walkSQL, from, batch)
		if err != nil {
			return nil, "", fmt.Errorf("storage: walk session %s: %w", sessionID, err)
		}
		defer rows.Close()
		var buf []core.Entry
		for rows.Next() {
			var want sql.NullString
			var r entryRow
			if err := rows.Scan(append([]any{&want}, r.dest()...)...); err != nil {
				return nil, "", fmt.Errorf("storage: walk session %s: %w", sessionID, err)
			}
			if !r.id.Valid {
				return buf, want.String, nil
			}
			buf = append(buf, r.entry())
		}
		if err := rows.Err(); err != nil {
			return nil, "", fmt.Errorf("storage: walk session %s: %w", sessionID, err)
		}
		return buf, "", nil
	})
}

// ActiveBranch implements core.Store: the entries from the root to the
// head, in order. An unsound branch is a CodeCorrupt error naming the
// problem; a session without entries has an empty branch.
func (db *DB) ActiveBranch(ctx context.Context, sessionID string) ([]core.Entry, error) {
	var out []core.Entry
	err := db.read(ctx, func(tx *stmtTx) (err error) {
		out, err = activeBranch(ctx, tx, sessionID)
		return err
	})
	return out, err
}

func activeBranch(ctx context.Context, q querier, sessionID string) ([]core.Entry, error) {
	st, err := loadState(ctx, q, sessionID)
	if err != nil {
		return nil, err
	}
	if st.headID == "" {
		return []core.Entry{}, nil
	}
	var chain func(fn func(core.Entry) bool) (bool, error)
	if !st.branched && st.headSeq.Valid {
		chain = func(fn func(core.Entry) bool) (bool, error) {
			return scanChain(ctx, q, sessionID, st.headID, st.headSeq.Int64, 1024, fn)
		}
	}
	return record.ActiveBranch(chain, func(fn func(core.Entry) bool) error {
		return newWalker(q, sessionID).Walk(ctx, st.headID, true, 1024, fn)
	})
}

// DefaultHistoryMessages is the page size History uses when asked for
// maxMessages <= 0.
const DefaultHistoryMessages = 60

// History implements core.Store. It walks the active branch backwards from
// the head (beforeSeq 0) or from the newest branch entry with
// seq < beforeSeq, and stops once maxMessages user/assistant messages are
// collected; other kinds ride along without counting. Entries come back
// oldest first; hasMore tells whether the branch goes on before the first.
// Only the page is read, whatever the length of the session: an unbranched
// session is read by seq, and on a branched one the page's first entry is
// found by the jump pointers of entry_links (O(log depth) seeks).
func (db *DB) History(ctx context.Context, sessionID string, beforeSeq int64, maxMessages int) (entries []core.Entry, hasMore bool, err error) {
	if maxMessages <= 0 {
		maxMessages = DefaultHistoryMessages
	}
	err = db.read(ctx, func(tx *stmtTx) error {
		entries, hasMore, err = history(ctx, tx, sessionID, beforeSeq, maxMessages)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return entries, hasMore, nil
}

func history(ctx context.Context, q querier, sessionID string, beforeSeq int64, maxMessages int) ([]core.Entry, bool, error) {
	st, err := loadState(ctx, q, sessionID)
	if err != nil {
		return nil, false, err
	}
	return historyOf(ctx, q, sessionID, st, beforeSeq, maxMessages)
}

// historyOf is history on the session's state as read already.
func historyOf(ctx context.Context, q querier, sessionID string, st sessionState, beforeSeq int64, maxMessages int) ([]core.Entry, bool, error) {
	if st.headID == "" {
		return []core.Entry{}, false, nil
	}
	if !st.headSeq.Valid {
		return nil, false, core.Errorf(core.CodeCorrupt, "session %s: head %q does not exist", sessionID, st.headID)
	}
	batch := min(2*maxMessages+16, 1024)
	page := record.NewPage(maxMessages)
	if !st.branched {
		fromSeq, firstID := st.headSeq.Int64, st.headID
		if beforeSeq > 0 && beforeSeq <= fromSeq {
			fromSeq, firstID = beforeSeq-1, ""
		}
		ok, err := scanChain(ctx, q, sessionID, firstID, fromSeq, batch, page.Collect)
		if err != nil {
			return nil, false, err
		}
		if ok {
			out, hasMore := page.Done()
			return out, hasMore, nil
		}
		// Not one sound chain: walk from the head, which names the problem.
		page.Reset()
	}
	start, w, err := branchBefore(ctx, q, sessionID, st, beforeSeq)
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
// the entries with seq < beforeSeq (0: from the head), and the walker to
// walk it with; start is "" when the branch has no such entry.
func branchBefore(ctx context.Context, q querier, sessionID string, st sessionState, beforeSeq int64) (start string, w *record.Walker, err error) {
	w = newWalker(q, sessionID)
	if beforeSeq <= 0 || beforeSeq > st.headSeq.Int64 {
		return st.headID, w, nil
	}
	// Seek the page's first entry by the jump pointers of entry_links;
	// walk from the head only when they cannot tell.
	start, ok, _, err := linkedEntryBefore(ctx, q, sessionID, st.headSeq.Int64, beforeSeq)
	if err == nil && !ok {
		start, err = w.EntryBefore(ctx, st.headID, beforeSeq)
	}
	if err != nil {
		return "", nil, err
	}
	return start, newWalker(q, sessionID), nil
}

// HistoryAfter implements core.Store: the page of the active branch after
// afterSeq, oldest first, until maxMessages user/assistant messages are
// in. An unbranched session is read by seq upwards; a branched one by
// windows walked back from the jump pointers' answer (record.ForwardWindows),
// so a page costs about what a backwards page costs wherever it starts.
func (db *DB) HistoryAfter(ctx context.Context, sessionID string, afterSeq int64, maxMessages int) (entries []core.Entry, hasNewer bool, err error) {
	if maxMessages <= 0 {
		maxMessages = DefaultHistoryMessages
	}
	err = db.read(ctx, func(tx *stmtTx) error {
		entries, hasNewer, err = historyAfter(ctx, tx, sessionID, afterSeq, maxMessages)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return entries, hasNewer, nil
}

// HistoryAround implements core.Store: the page around entry entryID, in
// one read (record.Around).
func (db *DB) HistoryAround(ctx context.Context, sessionID, entryID string, maxMessages int) (entries []core.Entry, hasMore, hasNewer bool, err error) {
	if maxMessages <= 0 {
		maxMessages = DefaultHistoryMessages
	}
	err = db.read(ctx, func(tx *stmtTx) error {
		st, err := loadState(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		var r entryRow
		err = tx.QueryRowContext(ctx, `SELECT `+entryCols+` FROM entries WHERE id = ?`, entryID).Scan(r.dest()...)
		if errors.Is(err, sql.ErrNoRows) {
			return core.NotFound("entry", entryID)
		}
		if err != nil {
			return fmt.Errorf("storage: get entry %s: %w", entryID, err)
		}
		entries, hasMore, hasNewer, err = record.Around(ctx, sessionID, r.entry(), maxMessages,
			func(ctx context.Context, beforeSeq int64, max int) ([]core.Entry, bool, error) {
				return historyOf(ctx, tx, sessionID, st, beforeSeq, max)
			},
			func(ctx context.Context, afterSeq int64, max int) ([]core.Entry, bool, error) {
				return historyAfterOf(ctx, tx, sessionID, st, afterSeq, max)
			})
		return err
	})
	if err != nil {
		return nil, false, false, err
	}
	return entries, hasMore, hasNewer, nil
}

func historyAfter(ctx context.Context, q querier, sessionID string, afterSeq int64, maxMessages int) ([]core.Entry, bool, error) {
	st, err := loadState(ctx, q, sessionID)
	if err != nil {
		return nil, false, err
	}
	return historyAfterOf(ctx, q, sessionID, st, afterSeq, maxMessages)
}

// historyAfterOf is historyAfter on the session's state as read already.
func historyAfterOf(ctx context.Context, q querier, sessionID string, st sessionState, afterSeq int64, maxMessages int) ([]core.Entry, bool, error) {
	if st.headID == "" {
		return []core.Entry{}, false, nil
	}
	if !st.headSeq.Valid {
		return nil, false, core.Errorf(core.CodeCorrupt, "session %s: head %q does not exist", sessionID, st.headID)
	}
	headSeq := st.headSeq.Int64
	page := record.NewForwardPage(maxMessages, headSeq)
	if !st.branched {
		ok, err := scanForward(ctx, q, sessionID, afterSeq, headSeq, min(2*maxMessages+16, 1024), page.Collect)
		if err != nil {
			return nil, false, err
		}
		if ok {
			out, hasNewer := page.Done()
			return out, hasNewer, nil
		}
		page.Reset() // not one sound chain: the walk names the problem
	}
	err := record.ForwardWindows(headSeq, afterSeq, page, func(lo, hi int64, fn func(core.Entry) bool) error {
		start, w, err := branchBefore(ctx, q, sessionID, st, hi)
		if err != nil || start == "" {
			return err
		}
		return w.Walk(ctx, start, start == st.headID, int(min(hi-lo+1, 1024)), fn)
	})
	if err != nil {
		return nil, false, err
	}
	out, hasNewer := page.Done()
	return out, hasNewer, nil
}

// Integrity implements core.Store. Each session's active branch is walked
// and, across all entries, every parent link is checked (it must name an
// existing, older entry of the same session); one problem is reported per
// unsound session and the others are left alone.
func (db *DB) Integrity(ctx context.Context) (core.IntegrityReport, error) {
	var rep core.IntegrityReport
	err := db.read(ctx, func(tx *stmtTx) error {
		var err error
		rep, err = integrity(ctx, tx)
		return err
	})
	return rep, err
}

func integrity(ctx context.Context, q querier) (core.IntegrityReport, error) {
	rep := core.IntegrityReport{Problems: []core.IntegrityProblem{}}
	var ids []string
	rows, err := q.QueryContext(ctx, `SELECT id FROM sessions ORDER BY id`)
	if err != nil {
		return rep, fmt.Errorf("storage: integrity: %w", err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return rep, fmt.Errorf("storage: integrity: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return rep, fmt.Errorf("storage: integrity: %w", err)
	}
	bad, err := record.CheckBranches(&rep, ids, func(id string) error {
		_, err := activeBranch(ctx, q, id)
		return err
	})
	if err != nil {
		return rep, err
	}
	// Off the active branch: parent links that are missing, cross sessions
	// or do not point to an older entry (every cycle has such a link).
	rows, err = q.QueryContext(ctx, `SELECT e.session_id, e.id, e.parent_id, p.id, p.session_id, e.seq, p.seq
		FROM entries e LEFT JOIN entries p ON p.id = e.parent_id
		WHERE e.parent_id IS NOT NULL AND (p.id IS NULL OR p.session_id <> e.session_id OR p.seq >= e.seq)
		ORDER BY e.session_id, e.seq`)
	if err != nil {
		return rep, fmt.Errorf("storage: integrity: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var sid, id, parent string
		var pid, psid sql.NullString
		var seq int64
		var pseq sql.NullInt64
		if err := rows.Scan(&sid, &id, &parent, &pid, &psid, &seq, &pseq); err != nil {
			return rep, fmt.Errorf("storage: integrity: %w", err)
		}
		if bad[sid] {
			continue
		}
		msg := record.BadLink{SessionID: sid, ID: id, Parent: parent, Seq: seq,
			ParentFound: pid.Valid, ParentSession: psid.String, ParentSeq: pseq.Int64}.Problem()
		rep.Problems = append(rep.Problems, core.IntegrityProblem{SessionID: sid, Problem: msg})
		bad[sid] = true
	}
	if err := rows.Err(); err != nil {
		return rep, fmt.Errorf("storage: integrity: %w", err)
	}
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM entries`).Scan(&rep.EntriesChecked); err != nil {
		return rep, fmt.Errorf("storage: integrity: %w", err)
	}
	return rep, nil
}
