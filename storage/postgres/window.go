package postgres

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// The window summary (core.Window) of each session lives on its row
// (window_head, window_state: the head it describes and the summary as
// JSON, without its evidence lists) and its evidence lists in
// session_window_items, as storage keeps them in its own tables: an append
// under the head folds its entries in (record.Fold) and writes the
// summary with the head it moves, on the row it holds locked; any other
// change of head leaves the summary describing an older head, and Window
// rebuilds it.

// stmt is one statement of a batch.
type stmt struct {
	sql  string
	args []any
}

func loadItems(ctx context.Context, db *DB, q querier, sessionID string, w *core.Window) (bool, error) {
	rows, err := q.Query(ctx, `SELECT list, item FROM session_window_items WHERE session_id = $1 ORDER BY list, ord`, sessionID)
	if err != nil {
		return false, db.errf(err, "read the window items of session %s", sessionID)
	}
	defer rows.Close()
	ls := record.WindowLists(w)
	found := false
	for rows.Next() {
		var list int
		var item string
		if err := rows.Scan(&list, &item); err != nil {
			return false, db.errf(err, "read the window items of session %s", sessionID)
		}
		if list >= 0 && list < len(ls) {
			*ls[list] = append(*ls[list], item)
			found = true
		}
	}
	if err := rows.Err(); err != nil {
		return false, db.errf(err, "read the window items of session %s", sessionID)
	}
	return found, nil
}

// windowWrite is what an append writes of the summary: its new state
// (state "" when the summary is left as it is) and the statements that
// write its evidence lists.
type windowWrite struct {
	head, state string
	items       []stmt
}

// trackWindow folds out, just appended as a chain, into the session's
// summary when that chain hangs under the head before the append and the
// summary describes that head (record.Fold); otherwise the summary is left
// stale and rebuilt when next read.
func (w *txWriter) trackWindow(ctx context.Context, sessionID string, st sessionState, out []core.Entry) (windowWrite, error) {
	f, ok, err := w.db.lists.Fold(sessionID, st.headID, out,
		func() (string, core.Window, bool, error) {
			win, found := record.DecodeWindow(st.windowState)
			return st.windowHead, win, found, nil
		},
		func(into *core.Window) (bool, error) { return loadItems(ctx, w.db, w.tx, sessionID, into) })
	if err != nil || !ok {
		return windowWrite{}, err
	}
	state, items, err := encodeWindow(w.db, sessionID, f.Win, f.Stored, f.Lists)
	if err != nil {
		return windowWrite{}, err
	}
	if f.Lists {
		w.db.lists.Keep(sessionID, f.Win)
	}
	return windowWrite{head: f.Win.HeadID, state: state, items: items}, nil
}

// encodeWindow returns win's state (the summary row's JSON) and, with
// lists, the statements that write its evidence lists as changes against
// stored: items added at the end are inserted; a list that changed
// otherwise is written again.
func encodeWindow(db *DB, sessionID string, win, stored core.Window, lists bool) (string, []stmt, error) {
	b, err := record.WindowState(win)
	if err != nil {
		return "", nil, db.errf(err, "encode the window of session %s", sessionID)
	}
	if !lists {
		return string(b), nil, nil
	}
	var out []stmt
	for _, lw := range record.ListWrites(win, stored) {
		if lw.Clear {
			out = append(out, stmt{`DELETE FROM session_window_items WHERE session_id = $1 AND list = $2`, []any{sessionID, lw.List}})
		}
		if len(lw.Items) == 0 {
			continue
		}
		ords := make([]int32, 0, len(lw.Items))
		items := make([]string, 0, len(lw.Items))
		for i, item := range lw.Items {
			ords = append(ords, int32(lw.From+i))
			items = append(items, txt(item))
		}
		out = append(out, stmt{`INSERT INTO session_window_items (session_id, list, ord, item)
			SELECT $1, $2, o, i FROM unnest($3::integer[], $4::text[]) AS u(o, i)`, []any{sessionID, lw.List, ords, items}})
	}
	return string(b), out, nil
}

// saveWindow writes a summary built from the record (Window's rebuild, a
// restore) in the transaction of w, which holds the session's row.
func saveWindow(ctx context.Context, w *txWriter, sessionID string, win core.Window) error {
	var stored core.Window
	if _, err := loadItems(ctx, w.db, w.tx, sessionID, &stored); err != nil {
		return err
	}
	w.db.lists.Forget(sessionID)
	state, items, err := encodeWindow(w.db, sessionID, win, stored, true)
	if err != nil {
		return err
	}
	items = append(items, stmt{`UPDATE sessions SET window_head = $2, window_state = $3 WHERE id = $1`, []any{sessionID, win.HeadID, state}})
	return w.execBatch(ctx, items, false)
}

// Window implements core.WindowReader: the session's summary row when it
// describes the head; otherwise it is rebuilt from the entries since the
// last boundary and saved, unless the head moved meanwhile.
func (db *DB) Window(ctx context.Context, sessionID string) (core.Window, error) {
	var win core.Window
	rebuilt := false
	err := db.read(ctx, func(q querier) error {
		st, err := loadState(ctx, db, q, sessionID)
		if err != nil {
			return err
		}
		if st.headID == "" {
			return nil
		}
		var head, stateText string
		if err := q.QueryRow(ctx, `SELECT window_head, window_state FROM sessions WHERE id = $1`, sessionID).Scan(&head, &stateText); err != nil {
			return db.errf(err, "read the window of session %s", sessionID)
		}
		state, found := record.DecodeWindow(stateText)
		if found && head == st.headID {
			var items core.Window
			ok, err := loadItems(ctx, db, q, sessionID, &items)
			if err != nil {
				return err
			}
			win = state
			if ok {
				record.SetLists(&win, items)
			}
			return nil
		}
		win, err = rebuildWindow(ctx, db, q, sessionID, st)
		rebuilt = err == nil
		return err
	})
	if err != nil {
		return core.Window{}, err
	}
	if rebuilt {
		// Best effort: a failure to save costs the next reader a rebuild.
		_ = db.update(ctx, func(w *txWriter) error {
			var head string
			if err := w.tx.QueryRow(ctx, `SELECT head_id FROM sessions WHERE id = $1 FOR UPDATE`, sessionID).Scan(&head); err != nil || head != win.HeadID {
				return err
			}
			return saveWindow(ctx, w, sessionID, win)
		})
	}
	return win, nil
}

// rebuildWindow computes the summary of the active branch: it walks back
// from the head to the newest boundary, then on until it knows the model,
// the effort and the newest checkpoint before the boundary, or reaches the
// root; then it folds the entries from the boundary to the head in order.
func rebuildWindow(ctx context.Context, db *DB, q querier, sessionID string, st sessionState) (core.Window, error) {
	var rb record.Rebuild
	walked := false
	if !st.branched && st.headSeq != nil {
		ok, err := scanChain(ctx, db, q, sessionID, st.headID, *st.headSeq, 1024, rb.Visit)
		if err != nil {
			return core.Window{}, err
		}
		walked = ok
	}
	if !walked {
		rb = record.Rebuild{}
		if err := newWalker(db, q, sessionID).Walk(ctx, st.headID, true, 1024, rb.Visit); err != nil {
			return core.Window{}, err
		}
	}
	return rb.Window(), nil
}
