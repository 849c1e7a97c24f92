package postgres

import (
	"context"

	"github.com/bridge-dev/bridge/core"
)

// A page far from the head of a branched session is found by walking the
// active branch back from the head: this store keeps no jump pointers. The
// walk is kept inside the server (branchWalkSQL), which returns only the
// runs of seqs it passed and where it stopped; the page is then read by seq
// from those runs. The checked Go walk (record.Walker) reads the same page
// whenever the links the server walked are not sound, so a damaged record
// is reported as before, naming the problem.

// branchWalkSQL walks the active branch back from the head $1 of session
// $2 until the first entry with seq <= $3 (the stop entry) or a root. It
// goes by runs: where an entry's parent is the session's entry at the next
// lower seq, as it is along a branch appended to in turn, one scan of the
// (session_id, seq) index backwards passes the whole run (runSQL), and
// only where a run ends is the parent looked up by id. A step to another
// run is taken only to a parent of the same session with a lower seq, so
// the walk ends on any link that is unsound (a missing parent, another
// session's entry, a cycle: every cycle has a link to a seq not lower);
// its last run then is not done (its bottom is neither a root nor at or
// below $3). It returns the runs from the head down: the seqs of each
// run's top and bottom, whether the walk ended there, and the id of its
// bottom entry.
const branchWalkSQL = `WITH RECURSIVE r AS (
	SELECT h.seq AS top, b.seq AS bottom, b.parent_id AS up, b.seq <= $3 OR b.parent_id IS NULL AS done, 0 AS n
	FROM entries h CROSS JOIN LATERAL (` + runSQL + `) b
	WHERE h.id = $1 AND h.session_id = $2
	UNION ALL
	SELECT h.seq, b.seq, b.parent_id, b.seq <= $3 OR b.parent_id IS NULL, r.n + 1
	FROM r JOIN entries h ON h.id = r.up AND h.session_id = $2 AND h.seq < r.bottom
	CROSS JOIN LATERAL (` + runSQL + `) b
	WHERE NOT r.done
)
SELECT r.top, r.bottom, r.done, e.id FROM r JOIN entries e ON e.session_id = $2 AND e.seq = r.bottom ORDER BY r.n`

// runSQL is the run of the branch from entry h down: the first entry at
// or below h's seq (scanning the session's entries by seq, newest first)
// that is at or below $3, a root, or whose parent is not the entry just
// below it; all those above it are each the parent of the one before.
const runSQL = `SELECT x.seq, x.parent_id FROM (
		SELECT seq, parent_id, lead(id) OVER (ORDER BY seq DESC) AS below
		FROM entries WHERE session_id = $2 AND seq <= h.seq ORDER BY seq DESC
	) x WHERE x.seq <= $3 OR x.parent_id IS NULL OR x.parent_id IS DISTINCT FROM x.below LIMIT 1`

// run is one run of branchWalkSQL: the branch's entries with seqs
// bottom..top, each the parent of the next.
type run struct{ top, bottom int64 }

// branchWalk is one walk of branchWalkSQL on the session of state st from
// its head down to the first entry with seq <= stop: the runs it passed,
// from the head down, and the id of the entry it stopped at (ok true; ""
// when it reached the root above stop). ok is false when the links walked
// are not sound (or the store is told to walk in Go): the caller then
// reads by the Go walker, which names the problem.
func branchWalk(ctx context.Context, db *DB, q querier, sessionID string, st sessionState, stop int64) (runs []run, at string, ok bool, err error) {
	if db.walkInGo {
		return nil, "", false, nil
	}
	rows, err := q.Query(ctx, branchWalkSQL, st.headID, sessionID, stop)
	if err != nil {
		return nil, "", false, db.errf(err, "read session %s", sessionID)
	}
	defer rows.Close()
	done, bottomID := false, ""
	for rows.Next() {
		var r run
		if err := rows.Scan(&r.top, &r.bottom, &done, &bottomID); err != nil {
			return nil, "", false, db.errf(err, "read session %s", sessionID)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", false, db.errf(err, "read session %s", sessionID)
	}
	if len(runs) == 0 || !done {
		return nil, "", false, nil // the head is not the session's entry, or a link is unsound
	}
	if runs[len(runs)-1].bottom <= stop {
		at = bottomID
	}
	return runs, at, true, nil
}

// readRuns reads the entries of runs (as branchWalk returns them) above
// stop, oldest first, batch rows per query, handing each to fn until fn
// returns false.
func readRuns(ctx context.Context, db *DB, q querier, sessionID string, runs []run, stop int64, batch int, fn func(core.Entry) bool) error {
	for i := len(runs) - 1; i >= 0; i-- {
		lo, hi := max(runs[i].bottom, stop+1), runs[i].top
		for lo <= hi {
			more := true
			n, err := visitRows(ctx, db, q, sessionID, func(e core.Entry) bool {
				lo, more = e.Seq+1, fn(e)
				return more
			}, forwardSQL, sessionID, lo, hi, batch)
			if err != nil || !more {
				return err
			}
			if n < batch {
				break
			}
		}
	}
	return nil
}
