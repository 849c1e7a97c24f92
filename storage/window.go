package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
)

// The window summary (core.Window) of each session lives in
// session_windows, one JSON row per session, with the head it describes.
// An append under the head folds the new entries in (checkpoint.Track) in
// the append's transaction; any other change of head leaves the row
// describing an older head, and Window rebuilds it from the entries since
// the last boundary. A row is right whenever its head_id is the session's
// head: entries never change, so the summary of the path from the root to
// an entry never does either.

const upsertWindowSQL = `INSERT INTO session_windows (session_id, head_id, state) VALUES (?, ?, ?)
	ON CONFLICT (session_id) DO UPDATE SET head_id = excluded.head_id, state = excluded.state`

// trackWindow folds out, just appended as a chain, into the session's
// summary when that chain hangs under prevHead (the head before the append)
// and the row describes prevHead; a new root starts an empty summary.
// Otherwise the row is left as it is (stale) and rebuilt when next read.
func (w *txWriter) trackWindow(ctx context.Context, sessionID, prevHead string, out []core.Entry) error {
	if len(out) == 0 || out[0].ParentID != prevHead {
		return nil
	}
	var win core.Window
	if prevHead != "" {
		var head, state string
		err := w.q.QueryRowContext(ctx, `SELECT head_id, state FROM session_windows WHERE session_id = ?`, sessionID).Scan(&head, &state)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // never built: built when read
		}
		if err != nil {
			return fmt.Errorf("storage: read the window of session %s: %w", sessionID, err)
		}
		if head != prevHead || json.Unmarshal([]byte(state), &win) != nil {
			return nil
		}
	}
	for _, e := range out {
		checkpoint.Track(&win, e)
	}
	return saveWindow(ctx, w.q, sessionID, win)
}

func saveWindow(ctx context.Context, q *stmtTx, sessionID string, win core.Window) error {
	b, err := json.Marshal(win)
	if err != nil {
		return fmt.Errorf("storage: encode the window of session %s: %w", sessionID, err)
	}
	if _, err := q.ExecContext(ctx, upsertWindowSQL, sessionID, win.HeadID, string(b)); err != nil {
		return fmt.Errorf("storage: save the window of session %s: %w", sessionID, err)
	}
	return nil
}

// Window implements core.WindowReader: the session's summary row when it
// describes the head; otherwise it is rebuilt from the entries since the
// last boundary (plus a walk further back for the facts a boundary does not
// reset: the model, the effort and the newest checkpoint) and saved, unless
// the head moved meanwhile.
func (db *DB) Window(ctx context.Context, sessionID string) (core.Window, error) {
	var win core.Window
	rebuilt := false
	err := db.read(ctx, func(tx *stmtTx) error {
		st, err := loadState(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		if st.headID == "" {
			return nil
		}
		var head, state string
		err = tx.QueryRowContext(ctx, `SELECT head_id, state FROM session_windows WHERE session_id = ?`, sessionID).Scan(&head, &state)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("storage: read the window of session %s: %w", sessionID, err)
		}
		if err == nil && head == st.headID && json.Unmarshal([]byte(state), &win) == nil {
			return nil
		}
		win, err = rebuildWindow(ctx, tx, sessionID, st)
		rebuilt = err == nil
		return err
	})
	if err != nil {
		return core.Window{}, err
	}
	if rebuilt {
		// Best effort: a failure to save costs the next reader a rebuild.
		_ = db.submit(ctx, func(ctx context.Context, w *txWriter) error {
			var head string
			if err := w.q.QueryRowContext(ctx, `SELECT head_id FROM sessions WHERE id = ?`, sessionID).Scan(&head); err != nil || head != win.HeadID {
				return err
			}
			return saveWindow(ctx, w.q, sessionID, win)
		})
	}
	return win, nil
}

// rebuildWindow computes the summary of the active branch: it walks back
// from the head to the newest boundary, then on (keeping nothing) until it
// knows the model, the effort and the newest checkpoint before the
// boundary, or reaches the root; then it folds the entries from the
// boundary to the head in order. On a session that never branched the
// entries are read again forwards in batches (memory stays flat); on a
// branched one the walk keeps them.
func rebuildWindow(ctx context.Context, q querier, sessionID string, st sessionState) (core.Window, error) {
	var kept []core.Entry
	var before core.Window // the facts a boundary carries over
	var low int64          // seq of the oldest entry of the window
	keep, inWindow, haveCheckpoint := false, true, false
	visit := func(e core.Entry) bool {
		if inWindow {
			low = e.Seq
			if keep {
				kept = append(kept, e)
			}
			if e.Kind == core.KindCompaction {
				inWindow = false
			}
			return true
		}
		var one core.Window
		switch e.Kind {
		case core.KindModelChanged:
			if before.Model == "" {
				checkpoint.Track(&one, e)
				before.Model = one.Model
			}
		case core.KindEffortChanged:
			if before.Effort == "" {
				checkpoint.Track(&one, e)
				before.Effort = one.Effort
			}
		case core.KindCheckpoint:
			if !haveCheckpoint {
				haveCheckpoint = true
				checkpoint.Track(&one, e)
				before.LastCheckpointID, before.LastCheckpointDecisions = one.LastCheckpointID, one.LastCheckpointDecisions
			}
		}
		return before.Model == "" || before.Effort == "" || !haveCheckpoint
	}
	if !st.branched && st.headSeq.Valid {
		ok, err := scanChain(ctx, q, sessionID, st.headID, st.headSeq.Int64, 1024, visit)
		if err != nil {
			return core.Window{}, err
		}
		if ok {
			win := before
			err := foldRange(ctx, q, sessionID, low, st.headSeq.Int64, func(e core.Entry) { checkpoint.Track(&win, e) })
			return win, err
		}
	}
	kept, before, keep, inWindow, haveCheckpoint = nil, core.Window{}, true, true, false
	if err := newWalker(q, sessionID).walk(ctx, st.headID, true, 1024, visit); err != nil {
		return core.Window{}, err
	}
	win := before
	for i := len(kept) - 1; i >= 0; i-- {
		checkpoint.Track(&win, kept[i])
	}
	return win, nil
}

// rangeSQL reads a session's entries oldest first in a seq range.
const rangeSQL = `SELECT ` + entryCols + ` FROM entries WHERE session_id = ? AND seq >= ? AND seq <= ? ORDER BY seq LIMIT ?`

// foldRange calls fn with each entry of the session with from <= seq <= to,
// oldest first, reading 1024 rows at a time.
func foldRange(ctx context.Context, q querier, sessionID string, from, to int64, fn func(core.Entry)) error {
	const batch = 1024
	for from <= to {
		rows, err := q.QueryContext(ctx, rangeSQL, sessionID, from, to, batch)
		if err != nil {
			return fmt.Errorf("storage: read session %s: %w", sessionID, err)
		}
		n := 0
		for rows.Next() {
			var r entryRow
			if err := rows.Scan(r.dest()...); err != nil {
				rows.Close()
				return fmt.Errorf("storage: read session %s: %w", sessionID, err)
			}
			e := r.entry()
			fn(e)
			from = e.Seq + 1
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("storage: read session %s: %w", sessionID, err)
		}
		if n < batch {
			return nil
		}
	}
	return nil
}
