package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// txWriter is core.Writer inside one write transaction (Update, or one group
// of the writer goroutine).
type txWriter struct {
	db *DB
	tx *sql.Tx

	q *stmtTx // tx through cached prepared statements

	// live, in a bulk write (UpdateBulk), indexes the entries appended
	// while the transaction runs (liveindex.go).
	live *liveIndex
	// conn is the bulk write's connection (the one tx runs on) and ins its
	// insert statement, for insertFast (bulkappend.go).
	conn *sql.Conn
	ins  *sqlite3.Stmt

	gate record.Gate // its calls, until the transaction ends
}

const insertEntrySQL = `INSERT INTO entries
	(id, session_id, parent_id, seq, kind, payload, native_id, token_estimate, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

// insertEntryOrSkipSQL inserts an entry unless the session already has one
// with its native id (then it changes nothing).
const insertEntryOrSkipSQL = insertEntrySQL + `
	ON CONFLICT (session_id, native_id) WHERE native_id IS NOT NULL DO NOTHING`

var _ core.Writer = (*txWriter)(nil)

// CreateSession implements core.Writer.
func (w *txWriter) CreateSession(ctx context.Context, s core.Session) (core.Session, error) {
	return record.Do(&w.gate, func() (core.Session, error) {
		return w.createSession(ctx, s)
	})
}

// PatchSession implements core.Writer.
func (w *txWriter) PatchSession(ctx context.Context, id string, p core.SessionPatch) (core.Session, error) {
	return record.Do(&w.gate, func() (core.Session, error) {
		return w.patchSession(ctx, id, p)
	})
}

// Append implements core.Writer.
func (w *txWriter) Append(ctx context.Context, sessionID string, entries ...core.NewEntry) ([]core.Entry, error) {
	if err := record.CheckEntries(entries, w.db.maxEntry); err != nil {
		return nil, err
	}
	return record.Do(&w.gate, func() ([]core.Entry, error) {
		out, err := w.appendEntries(ctx, sessionID, "", false, entries)
		w.handLive(err)
		return out, err
	})
}

// AppendTo implements core.Writer.
func (w *txWriter) AppendTo(ctx context.Context, sessionID, parentID string, entries ...core.NewEntry) ([]core.Entry, error) {
	if err := record.CheckEntries(entries, w.db.maxEntry); err != nil {
		return nil, err
	}
	return record.Do(&w.gate, func() ([]core.Entry, error) {
		out, err := w.appendEntries(ctx, sessionID, parentID, true, entries)
		w.handLive(err)
		return out, err
	})
}

// handLive hands the entries the last append inserted to the live
// indexer, or forgets them when it failed.
func (w *txWriter) handLive(err error) {
	if w.live == nil {
		return
	}
	if err != nil {
		w.live.drop()
		return
	}
	w.live.send()
}

// MoveHead implements core.Writer.
func (w *txWriter) MoveHead(ctx context.Context, sessionID, entryID string) error {
	return record.Run(&w.gate, func() error {
		return w.moveHead(ctx, sessionID, entryID)
	})
}

// CheckEntries tells whether Append would refuse any of entries (its size
// or shape) without writing anything.
func (db *DB) CheckEntries(entries []core.NewEntry) error {
	return record.CheckEntries(entries, db.maxEntry)
}

// AppendAudit implements core.Writer.
func (w *txWriter) AppendAudit(ctx context.Context, r core.AuditRecord) error {
	if err := record.CheckAudit(r); err != nil {
		return err
	}
	return record.Run(&w.gate, func() error {
		return w.appendAudit(ctx, r)
	})
}

// retime sets the time of the entry of sessionID whose native id is ne's
// to ne.At, when ne has a time: an import of a transcript already recorded
// corrects the times an older Bridge recorded (the moment of import).
func (w *txWriter) retime(ctx context.Context, sessionID string, ne core.NewEntry) error {
	if ne.NativeID == "" || ne.At.IsZero() || !core.Representable(ne.At) {
		return nil
	}
	t := record.Nanos(record.Norm(ne.At))
	if _, err := w.q.ExecContext(ctx, `UPDATE entries SET created_at = ? WHERE session_id = ? AND native_id = ? AND created_at <> ?`,
		t, sessionID, ne.NativeID, t); err != nil {
		return fmt.Errorf("storage: correct an entry's time: %w", err)
	}
	return nil
}

// RetimeSession dates sessionID by its entries: created at its earliest
// entry's time (when earlier than recorded), updated at its newest's. An
// import calls it once its entries carry the harness's own times, so the
// session list orders an imported session by when it happened.
func (w *txWriter) RetimeSession(ctx context.Context, sessionID string) error {
	return record.Run(&w.gate, func() error {
		if _, err := w.q.ExecContext(ctx, `UPDATE sessions SET
			created_at = min(created_at, coalesce((SELECT min(created_at) FROM entries WHERE session_id = ?1), created_at)),
			updated_at = coalesce((SELECT max(created_at) FROM entries WHERE session_id = ?1), updated_at)
			WHERE id = ?1`, sessionID); err != nil {
			return fmt.Errorf("storage: date session %s by its entries: %w", sessionID, err)
		}
		return nil
	})
}

func (w *txWriter) createSession(ctx context.Context, s core.Session) (core.Session, error) {
	s = record.ValidSession(s, core.ValidText)
	now := w.db.now()
	if s.ID == "" {
		s.ID = w.db.ids.New("s_")
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = s.CreatedAt
	}
	s.CreatedAt, s.UpdatedAt = record.Norm(s.CreatedAt), record.Norm(s.UpdatedAt)
	s.HeadID = "" // a new session has no entries yet
	var exists int
	if err := w.q.QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE id = ?`, s.ID).Scan(&exists); err != nil {
		return core.Session{}, fmt.Errorf("storage: create session: %w", err)
	}
	if exists > 0 {
		return core.Session{}, core.Errorf(core.CodeConflict, "session %q already exists", s.ID)
	}
	_, err := w.q.ExecContext(ctx, `INSERT INTO sessions (id, harness, cwd, title, preset, model, effort,
		native_session_id, head_id, restore_mode, latest_checkpoint_id, archived, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, '', ?, ?, ?, ?, ?)`,
		s.ID, s.Harness, s.Cwd, s.Title, s.Preset, s.Model, s.Effort, s.NativeSessionID,
		s.RestoreMode, s.LatestCheckpointID, s.Archived, record.Nanos(s.CreatedAt), record.Nanos(s.UpdatedAt))
	if err != nil {
		return core.Session{}, fmt.Errorf("storage: create session: %w", err)
	}
	w.db.fire("session.insert")
	return s, nil
}

// touch returns a new updated_at that is never before the previous one.
func (w *txWriter) touch(prev time.Time) time.Time {
	now := w.db.now()
	if !now.After(prev) {
		now = prev.Add(time.Nanosecond)
	}
	return record.Norm(now)
}

func (w *txWriter) patchSession(ctx context.Context, id string, p core.SessionPatch) (core.Session, error) {
	s, err := getSession(ctx, w.tx, id)
	if err != nil {
		return core.Session{}, err
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = core.ValidText(*v)
		}
	}
	set(&s.Title, p.Title)
	set(&s.Preset, p.Preset)
	set(&s.Model, p.Model)
	set(&s.Effort, p.Effort)
	set(&s.NativeSessionID, p.NativeSessionID)
	set(&s.RestoreMode, p.RestoreMode)
	set(&s.LatestCheckpointID, p.LatestCheckpointID)
	if p.Archived != nil {
		s.Archived = *p.Archived
	}
	s.UpdatedAt = w.touch(s.UpdatedAt)
	_, err = w.q.ExecContext(ctx, `UPDATE sessions SET title = ?, preset = ?, model = ?, effort = ?,
		native_session_id = ?, restore_mode = ?, latest_checkpoint_id = ?, archived = ?, updated_at = ?
		WHERE id = ?`,
		s.Title, s.Preset, s.Model, s.Effort, s.NativeSessionID, s.RestoreMode, s.LatestCheckpointID,
		s.Archived, record.Nanos(s.UpdatedAt), id)
	if err != nil {
		return core.Session{}, fmt.Errorf("storage: patch session %s: %w", id, err)
	}
	if p.Title != nil || p.Archived != nil {
		if err := w.noteSessionChange(ctx, id); err != nil {
			return core.Session{}, err
		}
	}
	w.db.fire("session.update")
	return s, nil
}

// sessionState is what an append needs to know about a session.
type sessionState struct {
	headID    string
	headSeq   sql.NullInt64 // null when there is no head or it is missing
	maxSeq    int64
	branched  bool
	updatedAt time.Time
}

func loadState(ctx context.Context, q querier, id string) (sessionState, error) {
	var st sessionState
	var upd int64
	err := q.QueryRowContext(ctx, `SELECT s.head_id, s.branched, s.updated_at,
		coalesce((SELECT max(seq) FROM entries WHERE session_id = s.id), 0),
		(SELECT seq FROM entries WHERE id = s.head_id AND session_id = s.id)
		FROM sessions s WHERE s.id = ?`, id).Scan(&st.headID, &st.branched, &upd, &st.maxSeq, &st.headSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return st, core.NotFound("session", id)
	}
	if err != nil {
		return st, fmt.Errorf("storage: load session %s: %w", id, err)
	}
	st.updatedAt = record.Unix(upd)
	return st, nil
}

// appendEntries adds entries as a chain. With explicit false the parent is
// the head; otherwise it is parentID ("" starts a new root).
func (w *txWriter) appendEntries(ctx context.Context, sessionID, parentID string, explicit bool, entries []core.NewEntry) ([]core.Entry, error) {
	entries = record.ValidEntries(entries, core.ValidText)
	st, err := loadState(ctx, w.q, sessionID)
	if err != nil {
		return nil, err
	}
	parentID, parentSeq, err := w.parentOf(ctx, st, sessionID, parentID, explicit)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return []core.Entry{}, nil
	}
	if st.maxSeq > core.MaxSeq-int64(len(entries)) {
		return nil, core.Errorf(core.CodeInvalid, "session %s holds sequence number %d; %d more entries would pass the largest the record holds (%d)",
			sessionID, st.maxSeq, len(entries), int64(core.MaxSeq))
	}
	now := w.db.now()
	out := make([]core.Entry, 0, len(entries))
	seq := st.maxSeq
	var lk *linker
	var status sql.NullString // of the newest session.status entry added
	rest := entries           // inserted one statement at a time below
	if w.canInsertFast(st, parentID, parentSeq, explicit, entries) {
		if out, status, err = w.insertFast(ctx, sessionID, parentID, seq, now, entries, out); err != nil {
			return nil, err
		}
		if n := len(out); n > 0 {
			parentID = out[n-1].ID
		}
		rest = nil
	}
	for _, ne := range rest {
		id, skip, err := w.entryID(ctx, sessionID, ne)
		if err != nil {
			return nil, err
		}
		if skip {
			continue // already recorded: skipped by contract
		}
		// A new child under an entry that is not the newest, or a second
		// root, starts a branch.
		branches := (parentID == "" && seq > 0) || (parentID != "" && parentSeq < seq)
		e := core.Entry{
			ID: id, SessionID: sessionID, ParentID: parentID, Seq: seq + 1, Kind: ne.Kind,
			Payload: ne.Payload, NativeID: ne.NativeID, TokenEstimate: ne.TokenEstimate, CreatedAt: record.EntryTime(ne, now),
		}
		inserted, err := w.insertOne(ctx, e, ne)
		if err != nil {
			return nil, err
		}
		if !inserted {
			continue // already imported: skipped by contract (its time corrected)
		}
		seq++
		if branches || st.branched { // entry_links rows (links.go)
			if lk == nil && !w.db.noLinks.Load() {
				lk = newLinker(w.q, sessionID)
			}
			if !st.branched {
				lk.branch(seq - 1)
			}
			if err := lk.add(ctx, seq, parentSeq); err != nil {
				return nil, err
			}
			st.branched = true
		}
		w.db.fire("entry.insert") // indexed for search by the indexer after the commit (searchindex.go)
		if v, ok := entryStatus(e.Kind, e.Payload); ok {
			status = v
		}
		out = append(out, e)
		parentID, parentSeq = id, seq
	}
	if len(out) == 0 {
		return out, nil
	}
	if err := lk.flush(ctx); err != nil {
		return nil, err
	}
	if _, err := w.q.ExecContext(ctx, `UPDATE sessions SET head_id = ?, branched = ?, updated_at = ?,
		last_status = coalesce(?, last_status) WHERE id = ?`,
		parentID, st.branched, record.Nanos(w.touch(st.updatedAt)), status, sessionID); err != nil {
		return nil, fmt.Errorf("storage: move head: %w", err)
	}
	w.db.fire("session.head")
	if err := w.trackWindow(ctx, sessionID, st.headID, out); err != nil {
		return nil, err
	}
	return out, nil
}

// parentOf is the parent of the next entry appended to a session in state
// st, and its seq: the session's head, or (explicit) parentID, which must
// be an entry of the session ("" for a new root).
func (w *txWriter) parentOf(ctx context.Context, st sessionState, sessionID, parentID string, explicit bool) (string, int64, error) {
	var parentSeq int64
	if !explicit {
		parentID = st.headID
		if parentID != "" {
			if !st.headSeq.Valid {
				return "", 0, core.Errorf(core.CodeCorrupt, "session %s: head %q does not exist", sessionID, parentID)
			}
			parentSeq = st.headSeq.Int64
		}
	} else if parentID != "" {
		var owner string
		err := w.q.QueryRowContext(ctx, `SELECT session_id, seq FROM entries WHERE id = ?`, parentID).Scan(&owner, &parentSeq)
		if errors.Is(err, sql.ErrNoRows) {
			return "", 0, core.Errorf(core.CodeInvalid, "session %s: parent entry %q does not exist", sessionID, parentID)
		}
		if err != nil {
			return "", 0, fmt.Errorf("storage: load parent %s: %w", parentID, err)
		}
		if owner != sessionID {
			return "", 0, core.Errorf(core.CodeInvalid, "session %s: parent entry %q belongs to session %s", sessionID, parentID, owner)
		}
	}
	return parentID, parentSeq, nil
}

// entryID is the id of ne when appended to a session: a new one, or the
// one ne gives, which must be new; skip is true for an entry with an id
// whose native id the session already has.
func (w *txWriter) entryID(ctx context.Context, sessionID string, ne core.NewEntry) (id string, skip bool, err error) {
	if ne.ID == "" {
		return w.db.ids.New("e_"), false, nil
	}
	if ne.NativeID != "" {
		var n int
		if err := w.q.QueryRowContext(ctx, `SELECT count(*) FROM entries WHERE session_id = ? AND native_id = ?`,
			sessionID, ne.NativeID).Scan(&n); err != nil {
			return "", false, fmt.Errorf("storage: check native id: %w", err)
		}
		if n > 0 {
			return "", true, nil
		}
	}
	var n int
	if err := w.q.QueryRowContext(ctx, `SELECT count(*) FROM entries WHERE id = ?`, ne.ID).Scan(&n); err != nil {
		return "", false, fmt.Errorf("storage: check entry id: %w", err)
	}
	if n > 0 {
		return "", false, core.Errorf(core.CodeConflict, "entry %q already exists", ne.ID)
	}
	return ne.ID, false, nil
}

// insertOne inserts e (made from ne) and hands it to the live indexer.
// An entry whose native id the session already has is skipped by
// contract: the unique index (session_id, native_id) finds it, in the same
// statement as the insert; then inserted is false and the recorded
// entry's time is corrected.
func (w *txWriter) insertOne(ctx context.Context, e core.Entry, ne core.NewEntry) (inserted bool, err error) {
	stmt := insertEntrySQL
	if ne.NativeID != "" {
		stmt = insertEntryOrSkipSQL
	}
	res, err := w.q.ExecContext(ctx, stmt, e.ID, e.SessionID, nullStr(e.ParentID), e.Seq, string(e.Kind),
		string(e.Payload), nullStr(e.NativeID), e.TokenEstimate, record.Nanos(e.CreatedAt))
	if err != nil {
		return false, fmt.Errorf("storage: insert entry: %w", err)
	}
	if ne.NativeID != "" {
		if n, err := res.RowsAffected(); err != nil {
			return false, fmt.Errorf("storage: insert entry: %w", err)
		} else if n == 0 {
			return false, w.retime(ctx, e.SessionID, ne)
		}
	}
	if w.live != nil {
		rowid, err := res.LastInsertId()
		if err != nil {
			return false, fmt.Errorf("storage: insert entry: %w", err)
		}
		w.live.add(rowid, e.ID, e.Kind, e.Payload)
	}
	return true, nil
}

func nullStr(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func (w *txWriter) moveHead(ctx context.Context, sessionID, entryID string) error {
	st, err := loadState(ctx, w.q, sessionID)
	if err != nil {
		return err
	}
	var owner string
	err = w.q.QueryRowContext(ctx, `SELECT session_id FROM entries WHERE id = ?`, entryID).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return core.NotFound("entry", entryID)
	}
	if err != nil {
		return fmt.Errorf("storage: move head: %w", err)
	}
	if owner != sessionID {
		return core.Errorf(core.CodeInvalid, "entry %q belongs to session %s, not %s", entryID, owner, sessionID)
	}
	if _, err := w.q.ExecContext(ctx, `UPDATE sessions SET head_id = ?, updated_at = ? WHERE id = ?`,
		entryID, record.Nanos(w.touch(st.updatedAt)), sessionID); err != nil {
		return fmt.Errorf("storage: move head: %w", err)
	}
	if err := w.noteSessionChange(ctx, sessionID); err != nil {
		return err
	}
	w.db.fire("session.head")
	return nil
}

func (w *txWriter) appendAudit(ctx context.Context, r core.AuditRecord) error {
	r.Source, r.Kind, r.Entity, r.Body = core.ValidText(r.Source), core.ValidText(r.Kind), core.ValidText(r.Entity), core.ValidJSON(r.Body)
	if r.Time.IsZero() {
		r.Time = w.db.now()
	}
	body := string(r.Body)
	if body == "" {
		body = "{}"
	}
	if _, err := w.q.ExecContext(ctx, `INSERT INTO audit (source, kind, entity, body, time) VALUES (?, ?, ?, ?, ?)`,
		r.Source, r.Kind, r.Entity, body, record.Nanos(r.Time)); err != nil {
		return fmt.Errorf("storage: append audit: %w", err)
	}
	w.db.fire("audit.insert")
	return nil
}
