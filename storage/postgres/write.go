package postgres

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/core"
)

// txWriter is core.Writer inside one write transaction.
type txWriter struct {
	db *DB
	tx pgx.Tx

	mu   sync.Mutex
	done bool
	// appended are the sessions this transaction appended to (OnAppend).
	appended []string
}

var errTxDone = core.Errorf(core.CodeInvalid, "postgres: writer used after its transaction ended")

func (w *txWriter) close() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

func (w *txWriter) lock() error {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return errTxDone
	}
	return nil
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
	if err := db.validateAll(entries); err != nil {
		return nil, err
	}
	err = db.write(ctx, func(w *txWriter) error {
		out, err = w.appendEntries(ctx, sessionID, "", false, entries)
		return err
	})
	return out, err
}

// AppendTo implements core.Writer.
func (db *DB) AppendTo(ctx context.Context, sessionID, parentID string, entries ...core.NewEntry) (out []core.Entry, err error) {
	if err := db.validateAll(entries); err != nil {
		return nil, err
	}
	err = db.write(ctx, func(w *txWriter) error {
		out, err = w.appendEntries(ctx, sessionID, parentID, true, entries)
		return err
	})
	return out, err
}

// MoveHead implements core.Writer.
func (db *DB) MoveHead(ctx context.Context, sessionID, entryID string) error {
	return db.write(ctx, func(w *txWriter) error { return w.moveHead(ctx, sessionID, entryID) })
}

// AppendAudit implements core.Writer.
func (db *DB) AppendAudit(ctx context.Context, r core.AuditRecord) error {
	if err := validateAudit(r); err != nil {
		return err
	}
	return db.write(ctx, func(w *txWriter) error { return w.appendAudit(ctx, r) })
}

// CreateSession implements core.Writer.
func (w *txWriter) CreateSession(ctx context.Context, s core.Session) (core.Session, error) {
	if err := w.lock(); err != nil {
		return core.Session{}, err
	}
	defer w.mu.Unlock()
	return w.createSession(ctx, s)
}

// PatchSession implements core.Writer.
func (w *txWriter) PatchSession(ctx context.Context, id string, p core.SessionPatch) (core.Session, error) {
	if err := w.lock(); err != nil {
		return core.Session{}, err
	}
	defer w.mu.Unlock()
	return w.patchSession(ctx, id, p)
}

// Append implements core.Writer.
func (w *txWriter) Append(ctx context.Context, sessionID string, entries ...core.NewEntry) ([]core.Entry, error) {
	if err := w.db.validateAll(entries); err != nil {
		return nil, err
	}
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	return w.appendEntries(ctx, sessionID, "", false, entries)
}

// AppendTo implements core.Writer.
func (w *txWriter) AppendTo(ctx context.Context, sessionID, parentID string, entries ...core.NewEntry) ([]core.Entry, error) {
	if err := w.db.validateAll(entries); err != nil {
		return nil, err
	}
	if err := w.lock(); err != nil {
		return nil, err
	}
	defer w.mu.Unlock()
	return w.appendEntries(ctx, sessionID, parentID, true, entries)
}

// MoveHead implements core.Writer.
func (w *txWriter) MoveHead(ctx context.Context, sessionID, entryID string) error {
	if err := w.lock(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return w.moveHead(ctx, sessionID, entryID)
}

// AppendAudit implements core.Writer.
func (w *txWriter) AppendAudit(ctx context.Context, r core.AuditRecord) error {
	if err := validateAudit(r); err != nil {
		return err
	}
	if err := w.lock(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return w.appendAudit(ctx, r)
}

// RetimeSession dates sessionID by its entries: created at its earliest
// entry's time (when earlier than recorded), updated at its newest's (an
// import calls it once its entries carry the harness's own times).
func (w *txWriter) RetimeSession(ctx context.Context, sessionID string) error {
	if err := w.lock(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	if _, err := w.tx.Exec(ctx, `UPDATE sessions SET
		created_at = least(created_at, coalesce((SELECT min(created_at) FROM entries WHERE session_id = $1), created_at)),
		updated_at = coalesce((SELECT max(created_at) FROM entries WHERE session_id = $1), updated_at)
		WHERE id = $1`, sessionID); err != nil {
		return w.db.errf(err, "date session %s by its entries", sessionID)
	}
	return nil
}

func (w *txWriter) createSession(ctx context.Context, s core.Session) (core.Session, error) {
	s = validSession(s)
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
	s.CreatedAt, s.UpdatedAt = norm(s.CreatedAt), norm(s.UpdatedAt)
	s.HeadID = ""
	tag, err := w.tx.Exec(ctx, `INSERT INTO sessions (id, harness, cwd, title, preset, model, effort,
		native_session_id, head_id, restore_mode, latest_checkpoint_id, archived, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, '', $9, $10, $11, $12, $13)
		ON CONFLICT (id) DO NOTHING`,
		s.ID, s.Harness, s.Cwd, s.Title, s.Preset, s.Model, s.Effort, s.NativeSessionID,
		s.RestoreMode, s.LatestCheckpointID, s.Archived, nanos(s.CreatedAt), nanos(s.UpdatedAt))
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
	return norm(now)
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
		s.Archived, nanos(s.UpdatedAt), id); err != nil {
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
}

// loadState reads a session's state; with lock, it locks the session's
// row until the transaction ends, so that appends to one session from
// every process run one after the other.
func loadState(ctx context.Context, db *DB, q querier, id string, lock bool) (sessionState, error) {
	var st sessionState
	var upd int64
	if lock {
		// The lock first, in a statement of its own: at READ COMMITTED
		// the next statement then sees every append committed before the
		// lock was granted (one statement would read the entries with the
		// snapshot it started with, before waiting for the lock).
		var one int
		err := q.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, id).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return st, core.NotFound("session", id)
		}
		if err != nil {
			return st, db.errf(err, "lock session %s", id)
		}
	}
	query := `SELECT s.head_id, s.branched, s.updated_at, s.harness,
		coalesce((SELECT max(seq) FROM entries WHERE session_id = s.id), 0),
		(SELECT seq FROM entries WHERE id = s.head_id AND session_id = s.id)
		FROM sessions s WHERE s.id = $1`
	err := q.QueryRow(ctx, query, id).Scan(&st.headID, &st.branched, &upd, &st.harness, &st.maxSeq, &st.headSeq)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, core.NotFound("session", id)
	}
	if err != nil {
		return st, db.errf(err, "load session %s", id)
	}
	st.updatedAt = unix(upd)
	return st, nil
}

// appendEntries adds entries as a chain. With explicit false the parent is
// the head; otherwise it is parentID ("" starts a new root). The rows go
// to the server in one statement.
func (w *txWriter) appendEntries(ctx context.Context, sessionID, parentID string, explicit bool, entries []core.NewEntry) ([]core.Entry, error) {
	entries = validText(entries)
	st, err := loadState(ctx, w.db, w.tx, sessionID, true)
	if err != nil {
		return nil, err
	}
	var parentSeq int64
	if !explicit {
		parentID = st.headID
		if parentID != "" {
			if st.headSeq == nil {
				return nil, core.Errorf(core.CodeCorrupt, "session %s: head %q does not exist", sessionID, parentID)
			}
			parentSeq = *st.headSeq
		}
	} else if parentID != "" {
		var owner string
		err := w.tx.QueryRow(ctx, `SELECT session_id, seq FROM entries WHERE id = $1`, parentID).Scan(&owner, &parentSeq)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, core.Errorf(core.CodeInvalid, "session %s: parent entry %q does not exist", sessionID, parentID)
		}
		if err != nil {
			return nil, w.db.errf(err, "load parent %s", parentID)
		}
		if owner != sessionID {
			return nil, core.Errorf(core.CodeInvalid, "session %s: parent entry %q belongs to session %s", sessionID, parentID, owner)
		}
	}
	if len(entries) == 0 {
		return []core.Entry{}, nil
	}
	if st.maxSeq > core.MaxSeq-int64(len(entries)) {
		return nil, core.Errorf(core.CodeInvalid, "session %s holds sequence number %d; %d more entries would pass the largest the record holds (%d)",
			sessionID, st.maxSeq, len(entries), int64(core.MaxSeq))
	}
	// Which native ids and chosen ids are known already: one query each.
	var natives, chosen []string
	for _, ne := range entries {
		if ne.NativeID != "" {
			natives = append(natives, ne.NativeID)
		}
		if ne.ID != "" {
			chosen = append(chosen, ne.ID)
		}
	}
	known := map[string]bool{}
	if len(natives) > 0 {
		if err := w.collect(ctx, known, `SELECT native_id FROM entries WHERE session_id = $1 AND native_id = ANY($2)`, sessionID, natives); err != nil {
			return nil, err
		}
	}
	taken := map[string]bool{}
	if len(chosen) > 0 {
		if err := w.collect(ctx, taken, `SELECT id FROM entries WHERE id = ANY($1)`, chosen); err != nil {
			return nil, err
		}
	}
	now := w.db.now()
	out := make([]core.Entry, 0, len(entries))
	seq := st.maxSeq
	branched := st.branched
	status, hasStatus := "", false
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
			Payload: ne.Payload, NativeID: ne.NativeID, TokenEstimate: ne.TokenEstimate, CreatedAt: entryTime(ne, now),
		}
		if v, ok := entryStatus(e.Kind, e.Payload); ok {
			status, hasStatus = v, true
		}
		out = append(out, e)
		parentID, parentSeq = id, seq
	}
	if len(out) == 0 {
		return out, nil
	}
	if err := w.insertEntries(ctx, st.harness, out); err != nil {
		return nil, err
	}
	var statusArg *string
	if hasStatus {
		statusArg = &status
	}
	if _, err := w.tx.Exec(ctx, `UPDATE sessions SET head_id = $1, branched = $2, updated_at = $3,
		last_status = coalesce($4, last_status) WHERE id = $5`,
		parentID, branched, nanos(w.touch(st.updatedAt)), statusArg, sessionID); err != nil {
		return nil, w.db.errf(err, "move head")
	}
	if err := w.trackWindow(ctx, sessionID, st.headID, out); err != nil {
		return nil, err
	}
	if !slices.Contains(w.appended, sessionID) {
		w.appended = append(w.appended, sessionID)
	}
	return out, nil
}

// insertEntrySQL inserts rows given as arrays (one statement for a whole
// append), with each entry's search vector (a tsvector literal made in Go
// from its searchable text, tokens.go).
const insertEntrySQL = `INSERT INTO entries
	(id, session_id, parent_id, seq, kind, payload, native_id, token_estimate, created_at, search)
	SELECT u.id, $1, u.parent_id, u.seq, u.kind, u.payload, u.native_id, u.tokens, u.created,
		CASE WHEN u.text = '' THEN NULL ELSE u.text::tsvector END
	FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::bigint[], $10::text[])
		AS u(id, parent_id, seq, kind, payload, native_id, tokens, created, text)
	ORDER BY u.seq
	RETURNING rowid, id`

// insertEntries writes es (of one session, in seq order) and their usage
// ledger rows.
func (w *txWriter) insertEntries(ctx context.Context, harness string, es []core.Entry) error {
	n := len(es)
	ids, parents, kinds, payloads, natives, texts := make([]string, n), make([]*string, n), make([]string, n),
		make([]string, n), make([]*string, n), make([]string, n)
	seqs, tokens, created := make([]int64, n), make([]int64, n), make([]int64, n)
	usage := false
	for i, e := range es {
		ids[i], kinds[i], payloads[i], seqs[i], tokens[i], created[i] = e.ID, string(e.Kind), string(e.Payload), e.Seq, e.TokenEstimate, nanos(e.CreatedAt)
		if e.ParentID != "" {
			parents[i] = &es[i].ParentID
		}
		if e.NativeID != "" {
			natives[i] = &es[i].NativeID
		}
		texts[i] = searchText(e.Kind, e.Payload)
		usage = usage || e.Kind == core.KindUsageReported
	}
	rows, err := w.tx.Query(ctx, insertEntrySQL, es[0].SessionID, ids, parents, seqs, kinds, payloads, natives, tokens, created, texts)
	if err != nil {
		return w.insertErr(err)
	}
	rowids := make(map[string]int64, n)
	for rows.Next() {
		var rowid int64
		var id string
		if err := rows.Scan(&rowid, &id); err != nil {
			rows.Close()
			return w.insertErr(err)
		}
		rowids[id] = rowid
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return w.insertErr(err)
	}
	if !usage {
		return nil
	}
	for _, e := range es {
		if e.Kind == core.KindUsageReported {
			if err := w.ledger(ctx, harness, rowids[e.ID], e); err != nil {
				return err
			}
		}
	}
	return nil
}

// insertErr maps a unique violation (an entry id another transaction
// took meanwhile) to CodeConflict.
func (w *txWriter) insertErr(err error) error {
	if code := pgCode(err); code == "23505" {
		return core.E(core.CodeConflict, "postgres: insert entries: an entry id or sequence number is taken", &scrubbed{err, w.db.password})
	}
	return w.db.errf(err, "insert entries")
}

func (w *txWriter) collect(ctx context.Context, into map[string]bool, query string, args ...any) error {
	rows, err := w.tx.Query(ctx, query, args...)
	if err != nil {
		return w.db.errf(err, "check ids")
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return w.db.errf(err, "check ids")
		}
		into[s] = true
	}
	if err := rows.Err(); err != nil {
		return w.db.errf(err, "check ids")
	}
	return nil
}

// retime sets the time of the entry of sessionID whose native id is ne's
// to ne.At, when ne has a time.
func (w *txWriter) retime(ctx context.Context, sessionID string, ne core.NewEntry) error {
	if ne.NativeID == "" || ne.At.IsZero() || !core.Representable(ne.At) {
		return nil
	}
	t := nanos(norm(ne.At))
	if _, err := w.tx.Exec(ctx, `UPDATE entries SET created_at = $1 WHERE session_id = $2 AND native_id = $3 AND created_at <> $1`,
		t, sessionID, ne.NativeID); err != nil {
		return w.db.errf(err, "correct an entry's time")
	}
	return nil
}

// ledger writes the usage ledger row of a usage.reported entry: its
// tokens and cost, the session's harness, and when the usage happened
// (the payload's "at" when it has one, else when the entry was recorded).
func (w *txWriter) ledger(ctx context.Context, harness string, rowid int64, e core.Entry) error {
	u, ok := core.ParseUsage(e.Payload)
	if !ok {
		return nil
	}
	at := nanos(e.CreatedAt)
	if u.At != nil && core.Representable(*u.At) {
		at = u.At.UnixNano()
	}
	if _, err := w.tx.Exec(ctx, `INSERT INTO usage_ledger (entry_rowid, session_id, harness, model, at, input_tokens,
		output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, estimated)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (entry_rowid) DO NOTHING`,
		rowid, e.SessionID, harness, txt(u.Model), at, max(u.InputTokens, 0), max(u.OutputTokens, 0),
		max(u.CacheReadTokens, 0), max(u.CacheWriteTokens, 0), u.CostUSD, u.CostEstimated); err != nil {
		return w.db.errf(err, "usage ledger")
	}
	return nil
}

func (w *txWriter) moveHead(ctx context.Context, sessionID, entryID string) error {
	st, err := loadState(ctx, w.db, w.tx, sessionID, true)
	if err != nil {
		return err
	}
	var owner string
	err = w.tx.QueryRow(ctx, `SELECT session_id FROM entries WHERE id = $1`, entryID).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return core.NotFound("entry", entryID)
	}
	if err != nil {
		return w.db.errf(err, "move head")
	}
	if owner != sessionID {
		return core.Errorf(core.CodeInvalid, "entry %q belongs to session %s, not %s", entryID, owner, sessionID)
	}
	if _, err := w.tx.Exec(ctx, `UPDATE sessions SET head_id = $1, updated_at = $2 WHERE id = $3`,
		entryID, nanos(w.touch(st.updatedAt)), sessionID); err != nil {
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
		r.Source, r.Kind, r.Entity, body, nanos(r.Time)); err != nil {
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
