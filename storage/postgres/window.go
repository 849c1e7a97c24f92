package postgres

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
)

// The window summary (core.Window) of each session lives on its row
// (window_head, window_state: the head it describes and the summary as
// JSON, without its evidence lists) and its evidence lists in
// session_window_items, as storage keeps them in its own tables: an append
// under the head folds its entries in (checkpoint.Track) and writes the
// summary with the head it moves, on the row it holds locked; any other
// change of head leaves the summary describing an older head, and Window
// rebuilds it.

const (
	listDecisions  = 0
	listFiles      = 1
	listCheckpoint = 2
)

func windowLists(w *core.Window) [3]*[]string {
	return [3]*[]string{&w.Decisions, &w.Files, &w.LastCheckpointDecisions}
}

// decodeWindow reads a stored summary; found is false when there is none
// or it is unreadable (then it is rebuilt).
func decodeWindow(state string) (win core.Window, found bool) {
	if state == "" || json.Unmarshal([]byte(state), &win) != nil {
		return core.Window{}, false
	}
	return win, true
}

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
	ls := windowLists(w)
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

func evidenceKind(k core.Kind) bool {
	switch k {
	case core.KindWorkerResult, core.KindArtifactCreated, core.KindCheckpoint, core.KindCompaction:
		return true
	}
	return false
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
// summary describes that head; a new root starts an empty summary.
// Otherwise the summary is left stale and rebuilt when next read.
func (w *txWriter) trackWindow(ctx context.Context, sessionID string, st sessionState, out []core.Entry) (windowWrite, error) {
	prevHead := st.headID
	if len(out) == 0 || out[0].ParentID != prevHead {
		return windowWrite{}, nil
	}
	var win core.Window
	lists := prevHead == ""
	if prevHead != "" {
		state, found := decodeWindow(st.windowState)
		if !found || st.windowHead != prevHead {
			return windowWrite{}, nil
		}
		win = state
	}
	for _, e := range out {
		lists = lists || evidenceKind(e.Kind)
	}
	var stored core.Window
	if lists {
		cached, ok := w.db.lists.recent(sessionID, prevHead)
		if ok && prevHead != "" {
			stored = cached
		} else {
			found, err := loadItems(ctx, w.db, w.tx, sessionID, &stored)
			if err != nil {
				return windowWrite{}, err
			}
			ok = found
		}
		if prevHead != "" && ok {
			win.Decisions, win.Files, win.LastCheckpointDecisions = stored.Decisions, stored.Files, stored.LastCheckpointDecisions
		}
	}
	for _, e := range out {
		checkpoint.Track(&win, e)
	}
	state, items, err := encodeWindow(w.db, sessionID, win, stored, lists)
	if err != nil {
		return windowWrite{}, err
	}
	if lists {
		w.db.lists.keep(sessionID, win)
	}
	return windowWrite{head: win.HeadID, state: state, items: items}, nil
}

// listCache keeps the evidence lists last written for a few sessions, by
// the head they describe (as storage's does). Another process's append
// moves the head, so a cached list is used only when its head is the head
// an append hangs under, read under the session's row lock.
type listCache struct {
	mu    sync.Mutex
	order []string
	m     map[string]core.Window
}

const listCacheSessions = 32

func (c *listCache) recent(sessionID, head string) (core.Window, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.m[sessionID]
	if !ok || w.HeadID != head {
		return core.Window{}, false
	}
	return w, true
}

func (c *listCache) keep(sessionID string, win core.Window) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]core.Window{}
	}
	if i := slices.Index(c.order, sessionID); i >= 0 {
		c.order = slices.Delete(c.order, i, i+1)
	}
	c.order = append(c.order, sessionID)
	c.m[sessionID] = core.Window{HeadID: win.HeadID, Decisions: win.Decisions, Files: win.Files, LastCheckpointDecisions: win.LastCheckpointDecisions}
	if len(c.order) > listCacheSessions {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *listCache) forget(sessionID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, sessionID)
}

// encodeWindow returns win's state (the summary row's JSON) and, with
// lists, the statements that write its evidence lists as changes against
// stored: items added at the end are inserted; a list that changed
// otherwise is written again.
func encodeWindow(db *DB, sessionID string, win, stored core.Window, lists bool) (string, []stmt, error) {
	state := win
	state.Decisions, state.Files, state.LastCheckpointDecisions = nil, nil, nil
	b, err := json.Marshal(state)
	if err != nil {
		return "", nil, db.errf(err, "encode the window of session %s", sessionID)
	}
	if !lists {
		return string(b), nil, nil
	}
	var out []stmt
	now, was := windowLists(&win), windowLists(&stored)
	for list := range now {
		n, o := *now[list], *was[list]
		from := len(o)
		if len(n) < len(o) || !slices.Equal(n[:len(o)], o) {
			out = append(out, stmt{`DELETE FROM session_window_items WHERE session_id = $1 AND list = $2`, []any{sessionID, list}})
			from = 0
		}
		if from >= len(n) {
			continue
		}
		ords := make([]int32, 0, len(n)-from)
		items := make([]string, 0, len(n)-from)
		for i := from; i < len(n); i++ {
			ords = append(ords, int32(i))
			items = append(items, txt(n[i]))
		}
		out = append(out, stmt{`INSERT INTO session_window_items (session_id, list, ord, item)
			SELECT $1, $2, o, i FROM unnest($3::integer[], $4::text[]) AS u(o, i)`, []any{sessionID, list, ords, items}})
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
	w.db.lists.forget(sessionID)
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
		state, found := decodeWindow(stateText)
		if found && head == st.headID {
			var items core.Window
			ok, err := loadItems(ctx, db, q, sessionID, &items)
			if err != nil {
				return err
			}
			win = state
			if ok {
				win.Decisions, win.Files, win.LastCheckpointDecisions = items.Decisions, items.Files, items.LastCheckpointDecisions
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
	var kept []core.Entry
	var before core.Window
	inWindow := true
	visit := func(e core.Entry) bool {
		if inWindow {
			kept = append(kept, e)
			inWindow = e.Kind != core.KindCompaction
			return true
		}
		return carried(&before, e)
	}
	walked := false
	if !st.branched && st.headSeq != nil {
		ok, err := scanChain(ctx, db, q, sessionID, st.headID, *st.headSeq, 1024, visit)
		if err != nil {
			return core.Window{}, err
		}
		walked = ok
	}
	if !walked {
		kept, before, inWindow = nil, core.Window{}, true
		if err := newWalker(db, q, sessionID).walk(ctx, st.headID, true, 1024, visit); err != nil {
			return core.Window{}, err
		}
	}
	win := before
	for i := len(kept) - 1; i >= 0; i-- {
		checkpoint.Track(&win, kept[i])
	}
	return win, nil
}

// carried notes in before what an entry older than the boundary carries
// over it (the newest model, effort and checkpoint); it reports whether
// older entries may still matter.
func carried(before *core.Window, e core.Entry) bool {
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
		if before.LastCheckpointID == "" {
			checkpoint.Track(&one, e)
			before.LastCheckpointID, before.LastCheckpointDecisions = one.LastCheckpointID, one.LastCheckpointDecisions
		}
	}
	return before.Model == "" || before.Effort == "" || before.LastCheckpointID == ""
}
