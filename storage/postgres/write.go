package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// txWriter is core.Writer inside one write transaction.
type txWriter struct {
	db *DB
	tx querier // the transaction (Update), or a connection (fast)

	// fast: a single append on a connection of its own, in two round
	// trips: BEGIN goes with the first statement (lockState) and COMMIT
	// with the last batch. begun and committed say how far it got.
	fast, begun, committed bool

	gate record.Gate // its calls, until the transaction ends
	// appended are the sessions this transaction appended to (OnAppend).
	appended []string
}

// The Writer methods of DB: each is one transaction of its own.

// CreateSession implements core.Writer.
func (db *DB) CreateSession(ctx context.Context, s core.Session) (out core.Session, err error) {
	err = db.write(ctx, func(w *txWriter) error {
		out, err = w.createSession(ctx, s)
		return err
	})
	return out, err
}

// PatchSession implements core.Writer.
func (db *DB) PatchSession(ctx context.Context, id string, p core.SessionPatch) (out core.Session, err error) {
	err = db.write(ctx, func(w *txWriter) error {
		out, err = w.patchSession(ctx, id, p)
		return err
	})
	return out, err
}

// Append implements core.Writer.
func (db *DB) Append(ctx context.Context, sessionID string, entries ...core.NewEntry) (out []core.Entry, err error) {
	if err := record.CheckEntries(entries, db.maxEntry); err != nil {
		return nil, err
	}
	return db.appendFast(ctx, sessionID, "", false, entries)
}

// AppendTo implements core.Writer.
func (db *DB) AppendTo(ctx context.Context, sessionID, parentID string, entries ...core.NewEntry) (out []core.Entry, err error) {
	if err := record.CheckEntries(entries, db.maxEntry); err != nil {
		return nil, err
	}
	return db.appendFast(ctx, sessionID, parentID, true, entries)
}

// appendFast is one append in a transaction of its own, on a connection
// of its own: BEGIN travels with the statement that locks the session and
// COMMIT with the batch that writes the entries, the head and the
// summary, so an append costs two round trips to the server (plus one per
// lookup of known native or chosen ids, and of evidence lists). A
// deadlock or serialisation failure is retried from the start.
func (db *DB) appendFast(ctx context.Context, sessionID, parentID string, explicit bool, entries []core.NewEntry) ([]core.Entry, error) {
	for attempt := 0; ; attempt++ {
		out, err := db.appendOnce(ctx, sessionID, parentID, explicit, entries)
		if err == nil || !retryable(err) || attempt >= 8 || ctx.Err() != nil {
			return out, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		}
	}
}

func (db *DB) appendOnce(ctx context.Context, sessionID, parentID string, explicit bool, entries []core.NewEntry) ([]core.Entry, error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, db.errf(err, "connect")
	}
	defer conn.Release()
	w := &txWriter{db: db, tx: conn, fast: true}
	out, err := w.appendEntries(ctx, sessionID, parentID, explicit, entries)
	w.gate.Close()
	end := context.WithoutCancel(ctx)
	switch {
	case err != nil && w.begun && !w.committed:
		if _, rerr := conn.Exec(end, "ROLLBACK"); rerr != nil {
			_ = conn.Conn().Close(end) // the pool drops a closed connection
		}
		return nil, err
	case err != nil:
		return nil, err
	case w.begun && !w.committed: // nothing appended (every entry known); times may have been corrected
		if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
			_ = conn.Conn().Close(end)
			return nil, db.errf(err, "commit")
		}
	}
	db.fireAppended(w.appended)
	return out, nil
}

// MoveHead implements core.Writer.
func (db *DB) MoveHead(ctx context.Context, sessionID, entryID string) error {
	return db.write(ctx, func(w *txWriter) error { return w.moveHead(ctx, sessionID, entryID) })
}

// AppendAudit implements core.Writer.
func (db *DB) AppendAudit(ctx context.Context, r core.AuditRecord) error {
	if err := record.CheckAudit(r); err != nil {
		return err
	}
	return db.write(ctx, func(w *txWriter) error { return w.appendAudit(ctx, r) })
}

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
		return w.appendEntries(ctx, sessionID, "", false, entries)
	})
}

// AppendTo implements core.Writer.
func (w *txWriter) AppendTo(ctx context.Context, sessionID, parentID string, entries ...core.NewEntry) ([]core.Entry, error) {
	if err := record.CheckEntries(entries, w.db.maxEntry); err != nil {
		return nil, err
	}
	return record.Do(&w.gate, func() ([]core.Entry, error) {
		return w.appendEntries(ctx, sessionID, parentID, true, entries)
	})
}

// MoveHead implements core.Writer.
func (w *txWriter) MoveHead(ctx context.Context, sessionID, entryID string) error {
	return record.Run(&w.gate, func() error {
		return w.moveHead(ctx, sessionID, entryID)
	})
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

// RetimeSession dates sessionID by its entries: created at its earliest
// entry's time (when earlier than recorded), updated at its newest's (an
// import calls it once its entries carry the harness's own times).
func (w *txWriter) RetimeSession(ctx context.Context, sessionID string) error {
	return record.Run(&w.gate, func() error {
		if _, err := w.tx.Exec(ctx, `UPDATE sessions SET
			created_at = least(created_at, coalesce((SELECT min(created_at) FROM entries WHERE session_id = $1), created_at)),
			updated_at = coalesce((SELECT max(created_at) FROM entries WHERE session_id = $1), updated_at)
			WHERE id = $1`, sessionID); err != nil {
			return w.db.errf(err, "date session %s by its entries", sessionID)
		}
		return nil
	})
}

func (w *txWriter) createSession(ctx context.Context, s core.Session) (core.Session, error) {
	s = record.ValidSession(s, txt)
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
	s.HeadID = ""
	tag, err := w.tx.Exec(ctx, `INSERT INTO sessions (id, harness, cwd, title, preset, model, effort,
		native_session_id, head_id, restore_mode, latest_checkpoint_id, archived, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, '', $9, $10, $11, $12, $13)
		ON CONFLICT (id) DO NOTHING`,
		s.ID, s.Harness, s.Cwd, s.Title, s.Preset, s.Model, s.Effort, s.NativeSessionID,
		s.RestoreMode, s.LatestCheckpointID, s.Archived, record.Nanos(s.CreatedAt), record.Nanos(s.UpdatedAt))
	if err != nil {
		return core.Session{}, w.db.errf(err, "create session")
	}
	if tag.RowsAffected() == 0 {
		return core.Session{}, core.Errorf(core.CodeConflict, "session %q already exists", s.ID)
	}
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
	s, err := getSession(ctx, w.db, w.tx, id, true)
	if err != nil {
		return core.Session{}, err
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = txt(*v)
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
	if _, err := w.tx.Exec(ctx, `UPDATE sessions SET title = $1, preset = $2, model = $3, effort = $4,
		native_session_id = $5, restore_mode = $6, latest_checkpoint_id = $7, archived = $8, updated_at = $9
		WHERE id = $10`,
		s.Title, s.Preset, s.Model, s.Effort, s.NativeSessionID, s.RestoreMode, s.LatestCheckpointID,
		s.Archived, record.Nanos(s.UpdatedAt), id); err != nil {
		return core.Session{}, w.db.errf(err, "patch session %s", id)
	}
	return s, nil
}

// sessionState is what an append needs to know about a session.
type sessionState struct {
	headID    string
	headSeq   *int64 // nil when there is no head or it is missing
	maxSeq    int64
	branched  bool
	updatedAt time.Time
	harness   string
	// The stored window summary and the head it describes (lockState).
	windowHead, windowState string
}

// loadState reads a session's state in a read's snapshot, checking the
// head against the entries.
func loadState(ctx context.Context, db *DB, q querier, id string) (sessionState, error) {
	var st sessionState
	var upd int64
	err := q.QueryRow(ctx, `SELECT s.head_id, s.branched, s.updated_at, s.harness,
		coalesce((SELECT max(seq) FROM entries WHERE session_id = s.id), 0),
		(SELECT seq FROM entries WHERE id = s.head_id AND session_id = s.id)
		FROM sessions s WHERE s.id = $1`, id).Scan(&st.headID, &st.branched, &upd, &st.harness, &st.maxSeq, &st.headSeq)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, core.NotFound("session", id)
	}
	if err != nil {
		return st, db.errf(err, "load session %s", id)
	}
	st.updatedAt = record.Unix(upd)
	return st, nil
}

// lockStateSQL locks a session's row until the transaction ends and reads
// what a write needs from it. Every write of a session's entries or head
// takes this lock first, so they run one after the other whatever process
// makes them; the row (not the entries) holds the head's and the newest
// seq, so that the row the lock returns, the newest version, is all the
// write needs (at READ COMMITTED a locking read returns the row as the
// last writer left it, while other tables would be read as of the
// statement's start).
const lockStateSQL = `SELECT head_id, head_seq, max_seq, branched, updated_at, harness, window_head, window_state
	FROM sessions WHERE id = $1 FOR UPDATE`

// lockState locks the session's row and reads its state. On the fast
// path, BEGIN goes in the same round trip.
func (w *txWriter) lockState(ctx context.Context, id string) (sessionState, error) {
	var st sessionState
	var headSeq, upd int64
	b := &pgx.Batch{}
	if w.fast && !w.begun {
		b.Queue("BEGIN")
	}
	b.Queue(lockStateSQL, id)
	br := w.tx.SendBatch(ctx, b)
	if w.fast && !w.begun {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return st, w.db.errf(err, "begin")
		}
		w.begun = true
	}
	err := br.QueryRow().Scan(&st.headID, &headSeq, &st.maxSeq, &st.branched, &upd, &st.harness, &st.windowHead, &st.windowState)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return st, core.NotFound("session", id)
	}
	if err != nil {
		return st, w.db.errf(err, "lock session %s", id)
	}
	if st.headID != "" {
		st.headSeq = &headSeq
	}
	st.updatedAt = record.Unix(upd)
	return st, nil
}

// execBatch sends stmts in one round trip; with commit (the fast path),
// COMMIT goes with them.
func (w *txWriter) execBatch(ctx context.Context, stmts []stmt, commit bool) error {
	commit = commit && w.fast
	if len(stmts) == 0 && !commit {
		return nil
	}
	b := &pgx.Batch{}
	for _, s := range stmts {
		b.Queue(s.sql, s.args...)
	}
	if commit {
		b.Queue("COMMIT")
	}
	br := w.tx.SendBatch(ctx, b)
	for range stmts {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return w.writeErr(err)
		}
	}
	if commit {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return w.db.errf(err, "commit")
		}
	}
	if err := br.Close(); err != nil {
		return w.writeErr(err)
	}
	if commit {
		w.committed = true
	}
	return nil
}

// appendEntries adds entries as a chain. With explicit false the parent is
// the head; otherwise it is parentID ("" starts a new root). The entries,
// the head and the summary go to the server in one batch.
func (w *txWriter) appendEntries(ctx context.Context, sessionID, parentID string, explicit bool, entries []core.NewEntry) ([]core.Entry, error) {
	entries = record.ValidEntries(entries, txt)
	st, err := w.lockState(ctx, sessionID)
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
	known, taken, err := w.knownIDs(ctx, sessionID, entries)
	if err != nil {
		return nil, err
	}
	now := w.db.now()
	out := make([]core.Entry, 0, len(entries))
	seq := st.maxSeq
	branched := st.branched
	var status *string
	for _, ne := range entries {
		if ne.NativeID != "" && known[ne.NativeID] {
			// Already recorded: skipped by contract, its time corrected.
			if err := w.retime(ctx, sessionID, ne); err != nil {
				return nil, err
			}
			continue
		}
		id := ne.ID
		if id == "" {
			id = w.db.ids.New("e_")
		} else if taken[id] {
			return nil, core.Errorf(core.CodeConflict, "entry %q already exists", id)
		}
		taken[id] = true
		if ne.NativeID != "" {
			known[ne.NativeID] = true
		}
		// A new child under an entry that is not the newest, or a second
		// root, starts a branch.
		if (parentID == "" && seq > 0) || (parentID != "" && parentSeq < seq) {
			branched = true
		}
		seq++
		e := core.Entry{
			ID: id, SessionID: sessionID, ParentID: parentID, Seq: seq, Kind: ne.Kind,
			Payload: ne.Payload, NativeID: ne.NativeID, TokenEstimate: ne.TokenEstimate, CreatedAt: record.EntryTime(ne, now),
		}
		if v, ok := entryStatus(e.Kind, e.Payload); ok {
			status = &v
		}
		out = append(out, e)
		parentID, parentSeq = id, seq
	}
	if len(out) == 0 {
		return out, nil
	}
	win, err := w.trackWindow(ctx, sessionID, st, out)
	if err != nil {
		return nil, err
	}
	var winHead, winState *string
	if win.state != "" {
		winHead, winState = &win.head, &win.state
	}
	stmts := []stmt{w.insertStmt(st.harness, out), {`UPDATE sessions SET head_id = $1, head_seq = $2, max_seq = $3, branched = $4,
		updated_at = $5, last_status = coalesce($6, last_status),
		window_head = coalesce($7, window_head), window_state = coalesce($8, window_state) WHERE id = $9`,
		[]any{parentID, parentSeq, seq, branched, record.Nanos(w.touch(st.updatedAt)), status, winHead, winState, sessionID}}}
	if err := w.execBatch(ctx, append(stmts, win.items...), true); err != nil {
		return nil, err
	}
	if !slices.Contains(w.appended, sessionID) {
		w.appended = append(w.appended, sessionID)
	}
	return out, nil
}

// parentOf is the parent of the next entry appended to a session in state
// st, and its seq: the session's head, or (explicit) parentID, which must
// be an entry of the session ("" for a new root).
func (w *txWriter) parentOf(ctx context.Context, st sessionState, sessionID, parentID string, explicit bool) (string, int64, error) {
	if !explicit {
		if st.headID == "" {
			return "", 0, nil
		}
		return st.headID, *st.headSeq, nil
	}
	if parentID == "" {
		return "", 0, nil
	}
	var owner string
	var parentSeq int64
	err := w.tx.QueryRow(ctx, `SELECT session_id, seq FROM entries WHERE id = $1`, parentID).Scan(&owner, &parentSeq)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, core.Errorf(core.CodeInvalid, "session %s: parent entry %q does not exist", sessionID, parentID)
	}
	if err != nil {
		return "", 0, w.db.errf(err, "load parent %s", parentID)
	}
	if owner != sessionID {
		return "", 0, core.Errorf(core.CodeInvalid, "session %s: parent entry %q belongs to session %s", sessionID, parentID, owner)
	}
	return parentID, parentSeq, nil
}

// writeErr maps a unique violation (an entry id another transaction took
// meanwhile) to CodeConflict.
func (w *txWriter) writeErr(err error) error {
	if code := pgCode(err); code == "23505" {
		return core.E(core.CodeConflict, "postgres: insert entries: an entry id or sequence number is taken", &scrubbed{err, w.db.password})
	}
	return w.db.errf(err, "write")
}

func (w *txWriter) moveHead(ctx context.Context, sessionID, entryID string) error {
	st, err := w.lockState(ctx, sessionID)
	if err != nil {
		return err
	}
	var owner string
	var seq int64
	err = w.tx.QueryRow(ctx, `SELECT session_id, seq FROM entries WHERE id = $1`, entryID).Scan(&owner, &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return core.NotFound("entry", entryID)
	}
	if err != nil {
		return w.db.errf(err, "move head")
	}
	if owner != sessionID {
		return core.Errorf(core.CodeInvalid, "entry %q belongs to session %s, not %s", entryID, owner, sessionID)
	}
	if _, err := w.tx.Exec(ctx, `UPDATE sessions SET head_id = $1, head_seq = $2, updated_at = $3 WHERE id = $4`,
		entryID, seq, record.Nanos(w.touch(st.updatedAt)), sessionID); err != nil {
		return w.db.errf(err, "move head")
	}
	return nil
}

func (w *txWriter) appendAudit(ctx context.Context, r core.AuditRecord) error {
	r.Source, r.Kind, r.Entity, r.Body = txt(r.Source), txt(r.Kind), txt(r.Entity), core.ValidJSON(r.Body)
	if r.Time.IsZero() {
		r.Time = w.db.now()
	}
	body := string(r.Body)
	if body == "" {
		body = "{}"
	}
	if _, err := w.tx.Exec(ctx, `INSERT INTO audit (source, kind, entity, body, time) VALUES ($1, $2, $3, $4, $5)`,
		r.Source, r.Kind, r.Entity, body, record.Nanos(r.Time)); err != nil {
		return w.db.errf(err, "append audit")
	}
	return nil
}

// pgCode is the SQLSTATE of a server error ("" for others).
func pgCode(err error) string {
	var pe interface{ SQLState() string }
	if errors.As(err, &pe) {
		return pe.SQLState()
	}
	return ""
}
