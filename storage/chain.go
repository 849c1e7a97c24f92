package storage

import (
	"context"
	"fmt"
	"math/bits"
	"strconv"

	"github.com/bridge-dev/bridge/core"
)

// chainSQL reads a session's entries newest first from a seq down, at
// most chainBatch(batch) of them. The limit is written into the statement's
// text, one statement per size class: SQLite plans with the value of a
// bound LIMIT, so a statement whose LIMIT is a parameter is compiled again
// every time it is bound (every page; a fifth of the page's time).
func chainSQL(limit int) string {
	return chainQueries[bits.Len(uint(limit))-1]
}

// chainBatch rounds a batch size up to the next of the size classes (powers
// of two from 16 to 1024). Only the rows the scan steps through are read, so
// a larger limit costs nothing.
func chainBatch(batch int) int {
	batch = min(max(batch, 16), 1024)
	return 1 << bits.Len(uint(batch-1))
}

var chainQueries = func() []string {
	q := make([]string, 11)
	for i := range q {
		q[i] = `SELECT ` + entryCols + ` FROM entries WHERE session_id = ? AND seq <= ? ORDER BY seq DESC LIMIT ` + strconv.Itoa(1<<i)
	}
	return q
}()

// scanChain is the fast path for a session that has never branched: its
// tree is one chain, so walking back from the entry at fromSeq is reading
// the (session_id, seq) index backwards. Every link is still checked: each
// entry must be the parent of the one visited before it, the first must be
// firstID when that is set, and the chain must end at a root. fn returns
// false to stop (the stopping entry's link to its parent is checked too).
// ok is false when the rows do not form that chain; the caller then falls
// back to the walker, which names the problem.
func scanChain(ctx context.Context, q querier, sessionID, firstID string, fromSeq int64, batch int, fn func(core.Entry) bool) (ok bool, err error) {
	batch = chainBatch(batch)
	query := chainSQL(batch)
	upper := fromSeq
	var prev *core.Entry
	stopped := false
	// step checks and visits one row; done means the scan is over.
	step := func(e core.Entry) (done, ok bool) {
		if prev == nil && firstID != "" && e.ID != firstID {
			return true, false
		}
		if prev != nil && prev.ParentID != e.ID {
			return true, false
		}
		if stopped {
			return true, true // the stopping entry's parent is where it should be
		}
		prev, upper = &e, e.Seq-1
		if !fn(e) {
			stopped = true
			if e.ParentID == "" {
				return true, true
			}
		}
		return false, true
	}
	for {
		rows, err := q.QueryContext(ctx, query, sessionID, upper)
		if err != nil {
			return false, fmt.Errorf("storage: read session %s: %w", sessionID, err)
		}
		n := 0
		done, good := false, true
		for !done && rows.Next() {
			var r entryRow
			if err := rows.Scan(r.dest()...); err != nil {
				rows.Close()
				return false, fmt.Errorf("storage: read session %s: %w", sessionID, err)
			}
			n++
			done, good = step(r.entry())
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, fmt.Errorf("storage: read session %s: %w", sessionID, err)
		}
		if done {
			return good, nil
		}
		if n < batch {
			// Nothing older: the chain must end at a root.
			if prev == nil {
				return firstID == "", nil
			}
			return prev.ParentID == "", nil
		}
	}
}
