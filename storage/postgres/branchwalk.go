package postgres

import (
	"context"

	"github.com/bridge-dev/bridge/core"
)

// A page far from the head of a branched session is found by walking the
// active branch back from the head: this store keeps no jump pointers. The
// walk is kept inside the server (branchWalkSQL), which returns only the
// rows the page needs; the checked Go walk (record.Walker) reads the same
// page whenever the links the server walked are not sound, so a damaged
// record is reported as before, naming the problem.

// branchWalkSQL walks the active branch back from the head $1 of session
// $2, carrying only each entry's id, parent, seq and whether it is a
// message (its kind in $4), until the first entry with seq <= $3 (the stop
// entry) or a root. A step is taken only to a parent of the same session
// with a lower seq, so the walk ends on any link that is unsound (a
// missing parent, another session's entry, a cycle: every cycle has a link
// to a seq not lower); the last row then is neither a root nor at or below
// $3. It returns, oldest first, full rows of the entries above $3 that a
// forwards page of $5 messages can hold (those with fewer than $5 messages
// older than them, above $3; kept), and the walk's last row (last).
const branchWalkSQL = `WITH RECURSIVE w AS (
	SELECT id, parent_id, seq, kind = ANY($4::text[]) AS msg, 0 AS n
	FROM entries WHERE id = $1 AND session_id = $2
	UNION ALL
	SELECT e.id, e.parent_id, e.seq, e.kind = ANY($4::text[]), w.n + 1
	FROM w JOIN entries e ON e.id = w.parent_id
	WHERE w.seq > $3 AND e.session_id = $2 AND e.seq < w.seq
), tail AS (
	SELECT id, n, sum(msg::int) OVER (ORDER BY n DESC ROWS UNBOUNDED PRECEDING) - msg::int AS older
	FROM w WHERE seq > $3
), last AS (
	SELECT id, n, seq FROM w ORDER BY n DESC LIMIT 1
), k AS (
	SELECT id, n, older < $5 AS kept FROM tail WHERE older < $5 OR n = (SELECT n FROM last)
	UNION ALL
	SELECT id, n, false FROM last WHERE seq <= $3
)
SELECT e.id, e.session_id, e.parent_id, e.seq, e.kind, e.payload, e.native_id, e.token_estimate, e.created_at,
	k.kept, k.n = (SELECT n FROM last)
FROM k JOIN entries e ON e.id = k.id ORDER BY k.n DESC`

var messageKinds = []string{string(core.KindUserMessage), string(core.KindAssistantMessage)}

// branchWalk is one walk of branchWalkSQL on the session of state st from
// its head down to the first entry with seq <= stop: the entries above
// stop that a forwards page of keep messages can hold, oldest first (none
// with keep 0), and the entry the walk stopped at (ok true; "" ID when the
// walk reached the root above stop). ok is false when the links walked
// are not sound (or the store is told to walk in Go): the caller then
// reads by the Go walker, which names the problem.
func branchWalk(ctx context.Context, db *DB, q querier, sessionID string, st sessionState, stop int64, keep int) (tail []core.Entry, at core.Entry, ok bool, err error) {
	if db.walkInGo {
		return nil, core.Entry{}, false, nil
	}
	rows, err := q.Query(ctx, branchWalkSQL, st.headID, sessionID, stop, messageKinds, keep)
	if err != nil {
		return nil, core.Entry{}, false, db.errf(err, "read session %s", sessionID)
	}
	defer rows.Close()
	var last core.Entry
	found := false
	for rows.Next() {
		var r entryRow
		var kept, isLast bool
		if err := rows.Scan(append(r.dest(), &kept, &isLast)...); err != nil {
			return nil, core.Entry{}, false, db.errf(err, "read session %s", sessionID)
		}
		e := r.entry()
		if isLast {
			last, found = e, true
		}
		if kept {
			tail = append(tail, e)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, core.Entry{}, false, db.errf(err, "read session %s", sessionID)
	}
	switch {
	case !found:
		return nil, core.Entry{}, false, nil // the head is not the session's entry
	case last.Seq <= stop:
		return tail, last, true, nil
	case last.ParentID == "":
		return tail, core.Entry{}, true, nil
	}
	return nil, core.Entry{}, false, nil // an unsound link ended the walk
}
