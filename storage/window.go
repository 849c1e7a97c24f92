package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

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

// The evidence lists of a summary live in session_window_items, one row per
// item, so that the summary row stays small and an append writes only the
// items it adds.
const (
	listDecisions  = 0
	listFiles      = 1
	listCheckpoint = 2 // the decisions of the newest checkpoint
)

// windowLists returns w's lists by list number.
func windowLists(w *core.Window) [3]*[]string {
	return [3]*[]string{&w.Decisions, &w.Files, &w.LastCheckpointDecisions}
}

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
	if json.Unmarshal([]byte(state), &win) != nil {
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
	ls := windowLists(w)
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

// evidenceKind reports whether folding an entry of kind k may change the
// evidence lists.
func evidenceKind(k core.Kind) bool {
	switch k {
	case core.KindWorkerResult, core.KindArtifactCreated, core.KindCheckpoint, core.KindCompaction:
		return true
	}
	return false
}

// trackWindow folds out, just appended as a chain, into the session's
// summary when that chain hangs under prevHead (the head before the append)
// and the row describes prevHead; a new root starts an empty summary.
// Otherwise the row is left as it is (stale) and rebuilt when next read.
// The evidence lists are read and written only when an entry may change
// them.
func (w *txWriter) trackWindow(ctx context.Context, sessionID, prevHead string, out []core.Entry) error {
	if len(out) == 0 || out[0].ParentID != prevHead {
		return nil
	}
	var win core.Window
	lists := prevHead == "" // a new root: whatever items are stored go
	if prevHead != "" {
		head, state, found, err := loadWindow(ctx, w.q, sessionID)
		if err != nil || !found || head != prevHead {
			return err // never built, or stale: built when read
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
			found, err := loadItems(ctx, w.q, sessionID, &stored)
			if err != nil {
				return err
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
	if err := saveWindow(ctx, w.q, sessionID, win, stored, lists); err != nil {
		return err
	}
	if lists {
		w.db.lists.keep(sessionID, win)
	}
	return nil
}

// listCache keeps the evidence lists last written for a few sessions of
// one database (DB.lists), by the head they describe, so that a session
// recording evidence does not read its lists back on every append. An
// entry is used only when its head is the head an append hangs under, so
// one left by a transaction that rolled back is never used. Lists only grow
// by appending (a boundary replaces them), so sharing their arrays is safe.
type listCache struct {
	mu    sync.Mutex
	order []string // least recent first
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

// execer is what writing a summary needs: *stmtTx or *sql.Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// saveWindow writes win's state and, with lists, its evidence lists as
// changes against stored (the lists as the table holds them): items added
// at the end are inserted; a list that changed otherwise is written again.
func saveWindow(ctx context.Context, q execer, sessionID string, win, stored core.Window, lists bool) error {
	state := win
	state.Decisions, state.Files, state.LastCheckpointDecisions = nil, nil, nil
	b, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("storage: encode the window of session %s: %w", sessionID, err)
	}
	if _, err := q.ExecContext(ctx, upsertWindowSQL, sessionID, win.HeadID, string(b)); err != nil {
		return fmt.Errorf("storage: save the window of session %s: %w", sessionID, err)
	}
	if !lists {
		return nil
	}
	now, was := windowLists(&win), windowLists(&stored)
	for list := range now {
		n, o := *now[list], *was[list]
		from := len(o)
		if len(n) < len(o) || !slices.Equal(n[:len(o)], o) {
			if _, err := q.ExecContext(ctx, `DELETE FROM session_window_items WHERE session_id = ? AND list = ?`, sessionID, list); err != nil {
				return fmt.Errorf("storage: save the window items of session %s: %w", sessionID, err)
			}
			from = 0
		}
		for i := from; i < len(n); i++ {
			if _, err := q.ExecContext(ctx, `INSERT INTO session_window_items (session_id, list, ord, item) VALUES (?, ?, ?, ?)`,
				sessionID, list, i, n[i]); err != nil {
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
				win.Decisions, win.Files, win.LastCheckpointDecisions = items.Decisions, items.Files, items.LastCheckpointDecisions
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
	var kept []core.Entry
	var before core.Window
	inWindow := true
	err := newWalker(q, sessionID).walk(ctx, st.headID, true, 1024, func(e core.Entry) bool {
		if inWindow {
			kept = append(kept, e)
			inWindow = e.Kind != core.KindCompaction
			return true
		}
		return carried(&before, e)
	})
	if err != nil {
		return core.Window{}, err
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
				if !carried(&before, r.entry()) {
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
