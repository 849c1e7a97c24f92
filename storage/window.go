package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// The window summary (core.Window) of each session lives in
// session_windows, one JSON row per session, with the head it describes,
// and its evidence lists in session_window_items, one row per item (see
// record.Fold for when the row is right and how an append changes it).

const upsertWindowSQL = `INSERT INTO session_windows (session_id, head_id, state) VALUES (?, ?, ?)
	ON CONFLICT (session_id) DO UPDATE SET head_id = excluded.head_id, state = excluded.state`

// loadWindow reads the summary row of a session: the head it describes and
// its state without the evidence lists (they are in session_window_items,
// see loadItems); found is false when there is none.
func loadWindow(ctx context.Context, q querier, sessionID string) (head string, win core.Window, found bool, err error) {
	var state string
	err = q.QueryRowContext(ctx, `SELECT head_id, state FROM session_windows WHERE session_id = ?`, sessionID).Scan(&head, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", core.Window{}, false, nil
	}
	if err != nil {
		return "", core.Window{}, false, fmt.Errorf("storage: read the window of session %s: %w", sessionID, err)
	}
	win, found = record.DecodeWindow(state)
	if !found {
		return "", core.Window{}, false, nil // unreadable: rebuilt
	}
	return head, win, true, nil
}

// loadItems reads the stored evidence lists of a session into w.
func loadItems(ctx context.Context, q querier, sessionID string, w *core.Window) (bool, error) {
	rows, err := q.QueryContext(ctx, `SELECT list, item FROM session_window_items WHERE session_id = ? ORDER BY list, ord`, sessionID)
	if err != nil {
		return false, fmt.Errorf("storage: read the window items of session %s: %w", sessionID, err)
	}
	defer rows.Close()
	ls := record.WindowLists(w)
	found := false
	for rows.Next() {
		var list int
		var item string
		if err := rows.Scan(&list, &item); err != nil {
			return false, fmt.Errorf("storage: read the window items of session %s: %w", sessionID, err)
		}
		if list >= 0 && list < len(ls) {
			*ls[list] = append(*ls[list], item)
			found = true
		}
	}
	return found, rows.Err()
}

// trackWindow folds out, just appended as a chain, into the session's
// summary when that chain hangs under prevHead (the head before the append)
// and the row describes prevHead (record.Fold); otherwise the row is left
// as it is (stale) and rebuilt when next read.
func (w *txWriter) trackWindow(ctx context.Context, sessionID, prevHead string, out []core.Entry) error {
	f, ok, err := w.db.lists.Fold(sessionID, prevHead, out,
		func() (string, core.Window, bool, error) { return loadWindow(ctx, w.q, sessionID) },
		func(into *core.Window) (bool, error) { return loadItems(ctx, w.q, sessionID, into) })
	if err != nil || !ok {
		return err
	}
	if err := saveWindow(ctx, w.q, sessionID, f.Win, f.Stored, f.Lists); err != nil {
		return err
	}
	if f.Lists {
		w.db.lists.Keep(sessionID, f.Win)
	}
	return nil
}

// execer is what writing a summary needs: *stmtTx or *sql.Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// saveWindow writes win's state and, with lists, its evidence lists as
// changes against stored (the lists as the table holds them): items added
// at the end are inserted; a list that changed otherwise is written again.
func saveWindow(ctx context.Context, q execer, sessionID string, win, stored core.Window, lists bool) error {
	b, err := record.WindowState(win)
	if err != nil {
		return fmt.Errorf("storage: encode the window of session %s: %w", sessionID, err)
	}
	if _, err := q.ExecContext(ctx, upsertWindowSQL, sessionID, win.HeadID, string(b)); err != nil {
		return fmt.Errorf("storage: save the window of session %s: %w", sessionID, err)
	}
	if !lists {
		return nil
	}
	for _, lw := range record.ListWrites(win, stored) {
		if lw.Clear {
			if _, err := q.ExecContext(ctx, `DELETE FROM session_window_items WHERE session_id = ? AND list = ?`, sessionID, lw.List); err != nil {
				return fmt.Errorf("storage: save the window items of session %s: %w", sessionID, err)
			}
		}
		for i, item := range lw.Items {
			if _, err := q.ExecContext(ctx, `INSERT INTO session_window_items (session_id, list, ord, item) VALUES (?, ?, ?, ?)`,
				sessionID, lw.List, lw.From+i, item); err != nil {
				return fmt.Errorf("storage: save the window items of session %s: %w", sessionID, err)
			}
		}
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
		head, state, found, err := loadWindow(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		if found && head == st.headID {
			var items core.Window
			ok, err := loadItems(ctx, tx, sessionID, &items)
			if err != nil {
				return err
			}
			win = state
			if ok {
				record.SetLists(&win, items)
			}
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
			var stored core.Window
			if _, err := loadItems(ctx, w.q, sessionID, &stored); err != nil {
				return err
			}
			return saveWindow(ctx, w.q, sessionID, win, stored, true)
		})
	}
	return win, nil
}

// rebuildWindow computes the summary of the active branch: it walks back
// from the head to the newest boundary, then on until it knows the model,
// the effort and the newest checkpoint before the boundary, or reaches the
// root; then it folds the entries from the boundary to the head in order.
// On a session that never branched the walk reads ids, links and kinds only
// (the payloads of the few entries it needs one by one) and the window is
// read forwards in batches, so memory stays flat; on a branched one the
// walker keeps the window's entries.
func rebuildWindow(ctx context.Context, q querier, sessionID string, st sessionState) (core.Window, error) {
	if !st.branched && st.headSeq.Valid {
		before, low, ok, err := scanBack(ctx, q, sessionID, st.headID, st.headSeq.Int64)
		if err != nil {
			return core.Window{}, err
		}
		if ok {
			win := before
			err := foldRange(ctx, q, sessionID, low, st.headSeq.Int64, func(e core.Entry) { checkpoint.Track(&win, e) })
			return win, err
		}
	}
	var rb record.Rebuild
	if err := newWalker(q, sessionID).Walk(ctx, st.headID, true, 1024, rb.Visit); err != nil {
		return core.Window{}, err
	}
	return rb.Window(), nil
}

// kindLinksSQL reads a session's entry links and kinds newest first from a seq
// down (no payloads).
// Its LIMIT is scanBack's batch, in the text (see chainSQL).
const kindLinksSQL = `SELECT id, parent_id, seq, kind FROM entries WHERE session_id = ? AND seq <= ? ORDER BY seq DESC LIMIT 4096`

// scanBack walks an unbranched session back from its head by the
// (session_id, seq) index, checking that each row is the parent of the one
// before and that the chain ends at a root (ok is false otherwise: the
// caller walks by parent links, which names the problem). It returns the
// seq of the newest boundary (of the root when there is none) and what the
// entries older than it carry over it.
func scanBack(ctx context.Context, q querier, sessionID, headID string, headSeq int64) (before core.Window, low int64, ok bool, err error) {
	const batch = 4096 // kindLinksSQL's LIMIT
	want, upper := headID, headSeq
	inWindow := true
	for {
		rows, err := q.QueryContext(ctx, kindLinksSQL, sessionID, upper)
		if err != nil {
			return core.Window{}, 0, false, fmt.Errorf("storage: read session %s: %w", sessionID, err)
		}
		type link struct {
			id, parent string
			seq        int64
			kind       core.Kind
		}
		var page []link
		for rows.Next() {
			var l link
			var parent sql.NullString
			if err := rows.Scan(&l.id, &parent, &l.seq, &l.kind); err != nil {
				rows.Close()
				return core.Window{}, 0, false, fmt.Errorf("storage: read session %s: %w", sessionID, err)
			}
			l.parent = parent.String
			page = append(page, l)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return core.Window{}, 0, false, fmt.Errorf("storage: read session %s: %w", sessionID, err)
		}
		for _, l := range page {
			if l.id != want {
				return core.Window{}, 0, false, nil
			}
			want, upper = l.parent, l.seq-1
			if inWindow {
				low = l.seq
				inWindow = l.kind != core.KindCompaction
			} else if l.kind == core.KindModelChanged || l.kind == core.KindEffortChanged || l.kind == core.KindCheckpoint {
				var r entryRow
				if err := q.QueryRowContext(ctx, `SELECT `+entryCols+` FROM entries WHERE id = ?`, l.id).Scan(r.dest()...); err != nil {
					return core.Window{}, 0, false, fmt.Errorf("storage: read session %s: %w", sessionID, err)
				}
				if !record.Carried(&before, r.entry()) {
					return before, low, true, nil
				}
			}
			if want == "" {
				return before, low, true, nil // the root
			}
		}
		if len(page) < batch {
			return core.Window{}, 0, false, nil // ran out before a root
		}
	}
}

// rangeSQL reads a session's entries oldest first in a seq range.
// Its LIMIT is foldRange's batch, in the text (see chainSQL).
const rangeSQL = `SELECT ` + entryCols + ` FROM entries WHERE session_id = ? AND seq >= ? AND seq <= ? ORDER BY seq LIMIT 1024`

// foldRange calls fn with each entry of the session with from <= seq <= to,
// oldest first, reading 1024 rows at a time.
func foldRange(ctx context.Context, q querier, sessionID string, from, to int64, fn func(core.Entry)) error {
	const batch = 1024 // rangeSQL's LIMIT
	for from <= to {
		rows, err := q.QueryContext(ctx, rangeSQL, sessionID, from, to)
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
