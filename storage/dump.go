package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
)

var _ core.Dumper = (*DB)(nil)

// Dump implements core.Dumper: one read transaction, entries by seq, audit
// records whose entity is the session, oldest first.
func (db *DB) Dump(ctx context.Context, sessionID string) (core.SessionDump, error) {
	var d core.SessionDump
	err := db.read(ctx, func(q *stmtTx) error {
		s, err := getSession(ctx, q, sessionID)
		if err != nil {
			return err
		}
		d.Session = s
		rows, err := q.QueryContext(ctx, `SELECT `+entryCols+` FROM entries WHERE session_id = ? ORDER BY seq`, sessionID)
		if err != nil {
			return fmt.Errorf("storage: dump %s: %w", sessionID, err)
		}
		defer rows.Close()
		d.Entries = []core.Entry{}
		for rows.Next() {
			var r entryRow
			if err := rows.Scan(r.dest()...); err != nil {
				return fmt.Errorf("storage: dump %s: %w", sessionID, err)
			}
			d.Entries = append(d.Entries, r.entry())
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("storage: dump %s: %w", sessionID, err)
		}
		return nil
	})
	if err != nil {
		return core.SessionDump{}, err
	}
	if d.Audit, err = db.Audit(ctx, sessionID, ""); err != nil {
		return core.SessionDump{}, err
	}
	if d.Audit == nil {
		d.Audit = []core.AuditRecord{}
	}
	return d, nil
}

// Restore implements core.Dumper in one write transaction (RestoreStream
// with every entry and audit record of d).
func (db *DB) Restore(ctx context.Context, d core.SessionDump) (added int, err error) {
	return db.RestoreStream(ctx, d.Session, func(r core.Restorer) error {
		for _, e := range d.Entries {
			if err := r.Entry(e); err != nil {
				return err
			}
		}
		for _, a := range d.Audit {
			if err := r.Audit(a); err != nil {
				return err
			}
		}
		return nil
	})
}

// RestoreStream implements core.Dumper in one write transaction. Every
// entry is checked (its session, id and sequence number, known kind,
// payload, parent in the same session and earlier) before it is written,
// and any failure rolls the whole restore back; the search indexer picks
// the entries up after the commit, like any append's (their rowids follow
// every earlier entry's). Nothing of the session is held in memory: fill
// hands entries over one at a time, and parents are looked up in the
// record.
func (db *DB) RestoreStream(ctx context.Context, s core.Session, fill func(r core.Restorer) error) (added int, err error) {
	s = validSession(s)
	if s.CreatedAt.IsZero() {
		s.CreatedAt = db.now()
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = s.CreatedAt
	}
	if err := checkRestoredSession(s); err != nil {
		return 0, err
	}
	err = db.Update(ctx, func(cw core.Writer) error {
		w := cw.(*txWriter)
		var exists int
		if err := w.q.QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE id = ?`, s.ID).Scan(&exists); err != nil {
			return fmt.Errorf("storage: restore: %w", err)
		}
		if exists == 0 {
			if _, err := w.q.ExecContext(ctx, `INSERT INTO sessions (id, harness, cwd, title, preset, model, effort,
				native_session_id, head_id, restore_mode, latest_checkpoint_id, archived, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, '', ?, ?, ?, ?, ?)`,
				s.ID, s.Harness, s.Cwd, s.Title, s.Preset, s.Model, s.Effort, s.NativeSessionID,
				s.RestoreMode, s.LatestCheckpointID, s.Archived, nanos(s.CreatedAt), nanos(s.UpdatedAt)); err != nil {
				return fmt.Errorf("storage: restore session: %w", err)
			}
			db.fire("session.insert")
		}
		r := &restorer{ctx: ctx, db: db, w: w, s: s, exists: exists > 0, lk: newLinker(w.q, s.ID), tracking: exists == 0}
		if exists > 0 {
			if err := w.q.QueryRowContext(ctx, `SELECT branched, coalesce((SELECT max(seq) FROM entries WHERE session_id = ?), 0)
				FROM sessions WHERE id = ?`, s.ID, s.ID).Scan(&r.linked, &r.storeMax); err != nil {
				return fmt.Errorf("storage: restore: %w", err)
			}
		}
		if err := fill(r); err != nil {
			return err
		}
		if err := r.lk.flush(ctx); err != nil {
			return err
		}
		added = r.added
		if exists > 0 {
			// A session already present only gains entries: its head
			// fields (title, native session id, archived, head, …) stay
			// what this record says, so its active branch, its window
			// summary and what a native resume resumes are unchanged.
			if r.branched {
				if _, err := w.q.ExecContext(ctx, `UPDATE sessions SET branched = 1 WHERE id = ?`, s.ID); err != nil {
					return fmt.Errorf("storage: restore: %w", err)
				}
			}
			return nil
		}
		for _, ref := range []struct{ what, id string }{{"head", s.HeadID}, {"latestCheckpointId", s.LatestCheckpointID}} {
			if ref.id == "" {
				continue
			}
			var n int
			if err := w.q.QueryRowContext(ctx, `SELECT count(*) FROM entries WHERE id = ? AND session_id = ?`, ref.id, s.ID).Scan(&n); err != nil {
				return fmt.Errorf("storage: restore: %w", err)
			}
			if n == 0 {
				return core.Errorf(core.CodeInvalid, "restore: %s %q is not an entry of the session", ref.what, ref.id)
			}
		}
		if _, err := w.q.ExecContext(ctx, `UPDATE sessions SET title = ?, preset = ?, model = ?, effort = ?,
			native_session_id = ?, head_id = ?, restore_mode = ?, latest_checkpoint_id = ?, archived = ?,
			branched = ?, last_status = coalesce(?, last_status), updated_at = ? WHERE id = ?`,
			s.Title, s.Preset, s.Model, s.Effort, s.NativeSessionID, s.HeadID, s.RestoreMode, s.LatestCheckpointID,
			s.Archived, r.branched, r.status, nanos(s.UpdatedAt), s.ID); err != nil {
			return fmt.Errorf("storage: restore head: %w", err)
		}
		db.fire("session.head")
		return r.saveWindow(s.HeadID)
	})
	if err != nil {
		return 0, err
	}
	return added, nil
}

// restorer is core.Restorer inside RestoreStream's transaction.
type restorer struct {
	ctx      context.Context
	db       *DB
	w        *txWriter
	s        core.Session
	exists   bool
	storeMax int64 // of a session already present: its newest seq before the restore
	n        int
	lastSeq  int64
	branched bool
	added    int
	lk       *linker // entry_links rows; a new one every linkEvery entries
	// linked: the session has branched, so its entries get entry_links
	// rows (before the first branch they are one chain; links.go).
	linked bool
	status sql.NullString // of the newest session.status entry restored

	// The window summary of the restored head is written in the restore's
	// transaction, so that the first read of a restored session does not
	// rebuild it (on a session of a million entries, seconds). While the
	// restored entries continue one chain from the summary's head (tip),
	// each is folded in as it is written; otherwise the summary is rebuilt
	// at the end (see saveWindow).
	tracking bool
	tip      string      // the entry win describes ("" before the first)
	win      core.Window // of the chain up to tip
	stored   core.Window // the evidence lists as session_window_items holds them
}

// track folds a restored entry into the summary while the entries form one
// chain from its head.
func (r *restorer) track(e core.Entry) {
	if !r.tracking {
		return
	}
	if e.ParentID != r.tip {
		r.tracking, r.win = false, core.Window{}
		return
	}
	checkpoint.Track(&r.win, e)
	r.tip = e.ID
}

// saveWindow writes the summary of the restored session's head: the one
// folded while restoring when it reached that head, else one rebuilt from
// the record (what the first read would have done).
func (r *restorer) saveWindow(head string) error {
	if head == "" {
		return nil
	}
	win := r.win
	if !r.tracking || r.tip != head {
		st, err := loadState(r.ctx, r.w.q, r.s.ID)
		if err != nil {
			return err
		}
		if win, err = rebuildWindow(r.ctx, r.w.q, r.s.ID, st); core.ErrorCode(err) == core.CodeCorrupt {
			return nil // the entries are kept; reads name the problem
		} else if err != nil {
			return err
		}
	}
	return saveWindow(r.ctx, r.w.q, r.s.ID, win, r.stored, true)
}

// linkEvery bounds the entry_links rows a restore holds before writing
// them (its linker keeps the rows it computed).
const linkEvery = 1000

// Entry implements core.Restorer.
func (r *restorer) Entry(e core.Entry) error {
	r.n++
	s, ctx, w := r.s, r.ctx, r.w
	ne := validEntry(core.NewEntry{ID: e.ID, Kind: e.Kind, Payload: e.Payload, NativeID: e.NativeID})
	e.ID, e.Kind, e.Payload, e.NativeID = ne.ID, ne.Kind, ne.Payload, ne.NativeID
	e.SessionID, e.ParentID = core.ValidText(e.SessionID), core.ValidText(e.ParentID)
	if e.SessionID != s.ID {
		return core.Errorf(core.CodeInvalid, "restore: entry %d (%.80s) belongs to session %.80q, not %.80q", r.n, e.ID, e.SessionID, s.ID)
	}
	if e.ID == "" || e.Seq <= 0 {
		return core.Errorf(core.CodeInvalid, "restore: entry %d has no id or sequence number", r.n)
	}
	if err := checkRestoredEntry(r.n, e); err != nil {
		return err
	}
	if e.Seq <= r.lastSeq {
		return core.Errorf(core.CodeInvalid, "restore: entries are not in sequence order at %s", e.ID)
	}
	prev := max(r.lastSeq, r.storeMax)
	r.lastSeq = e.Seq
	err := r.db.checkSize(ne)
	if err == nil {
		err = ne.Validate()
	}
	if err != nil {
		return core.E(core.CodeInvalid, fmt.Sprintf("restore: entry %s", e.ID), err)
	}
	var owner string
	var seq int64
	err = w.q.QueryRowContext(ctx, `SELECT session_id, seq FROM entries WHERE id = ?`, e.ID).Scan(&owner, &seq)
	switch {
	case err == nil && owner != s.ID:
		return core.Errorf(core.CodeConflict, "restore: entry %q already exists in session %s", e.ID, owner)
	case err == nil && seq != e.Seq:
		return core.Errorf(core.CodeConflict, "restore: entry %q is already recorded with sequence %d, not %d", e.ID, seq, e.Seq)
	case err == nil:
		return nil // already there
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("storage: restore: %w", err)
	case e.Seq <= r.storeMax:
		return core.Errorf(core.CodeConflict, "restore: entry %s has sequence %d, among the entries session %s already holds (up to %d); a session already present only gains entries after its own",
			e.ID, e.Seq, s.ID, r.storeMax)
	}
	var pseq int64 // 0: a root
	if e.ParentID != "" {
		err := w.q.QueryRowContext(ctx, `SELECT seq FROM entries WHERE id = ? AND session_id = ?`, e.ParentID, s.ID).Scan(&pseq)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && pseq >= e.Seq) {
			return core.Errorf(core.CodeInvalid, "restore: entry %s: parent %q is not an earlier entry of the session", e.ID, e.ParentID)
		}
		if err != nil {
			return fmt.Errorf("storage: restore: %w", err)
		}
		if pseq < e.Seq-1 {
			r.branched = true
		}
	} else if e.Seq > 1 {
		r.branched = true
	}
	if err := r.link(prev, e.Seq, pseq); err != nil {
		return err
	}
	if _, err := w.q.ExecContext(ctx, insertEntrySQL, e.ID, s.ID, nullStr(e.ParentID), e.Seq, string(e.Kind),
		string(e.Payload), nullStr(e.NativeID), e.TokenEstimate, nanos(e.CreatedAt)); err != nil {
		return core.E(core.CodeConflict, fmt.Sprintf("restore: entry %s", e.ID), err)
	}
	r.db.fire("entry.insert")
	r.track(e)
	if v, ok := entryStatus(e.Kind, e.Payload); ok {
		r.status = v
	}
	r.added++
	return nil
}

// link computes the entry_links row of the entry at seq (prev is the seq
// before it), from the session's first branch on, writing the rows held
// every linkEvery entries.
func (r *restorer) link(prev, seq, parentSeq int64) error {
	if !r.branched && !r.linked {
		return nil
	}
	if !r.linked {
		r.lk.branch(prev)
		r.linked = true
	}
	if err := r.lk.add(r.ctx, seq, parentSeq); err != nil {
		return err
	}
	if r.added > 0 && r.added%linkEvery == 0 {
		if err := r.lk.flush(r.ctx); err != nil {
			return err
		}
		r.lk = newLinker(r.w.q, r.s.ID)
	}
	return nil
}

// Audit implements core.Restorer: the records are kept only when the
// session is new (a session already present keeps its own).
func (r *restorer) Audit(a core.AuditRecord) error {
	if r.exists {
		return nil
	}
	if a.Time.IsZero() {
		return core.Errorf(core.CodeInvalid, "restore: audit record %.40q has no time", a.Kind)
	}
	if err := validateAudit(a); err != nil {
		return core.E(core.CodeInvalid, "restore", err)
	}
	if core.ValidText(a.Entity) != r.s.ID {
		return core.Errorf(core.CodeInvalid, "restore: audit record %.40q is about %.80q, not the restored session %s", a.Kind, a.Entity, r.s.ID)
	}
	return r.w.appendAudit(r.ctx, a)
}

// maxRestoredID bounds the ids and names of a restored session and its
// entries (Bridge's own are a few dozen bytes).
const maxRestoredID = 1024

// checkRestoredSession refuses a session head the record cannot hold as
// it is: no id or harness, an over-long id, or a time outside the range
// the record stores exactly (core.Representable).
func checkRestoredSession(s core.Session) error {
	if s.ID == "" {
		return core.Errorf(core.CodeInvalid, "restore: the session has no id")
	}
	if s.Harness == "" {
		return core.Errorf(core.CodeInvalid, "restore: session %.80s has no harness", s.ID)
	}
	for _, f := range []struct{ name, v string }{{"sessionId", s.ID}, {"harness", s.Harness}, {"nativeSessionId", s.NativeSessionID},
		{"headId", s.HeadID}, {"latestCheckpointId", s.LatestCheckpointID}, {"preset", s.Preset}, {"model", s.Model},
		{"effort", s.Effort}, {"restoreMode", s.RestoreMode}} {
		if len(f.v) > maxRestoredID {
			return core.Errorf(core.CodeInvalid, "restore: session %s is %d bytes long, over the limit of %d", f.name, len(f.v), maxRestoredID)
		}
	}
	if err := checkTime("session createdAt", s.CreatedAt); err != nil {
		return err
	}
	return checkTime("session updatedAt", s.UpdatedAt)
}

// checkRestoredEntry refuses an entry whose numbers, time or ids the
// record cannot hold: a sequence number or token estimate outside
// 0..core.MaxSeq (seq+1 of the next append must not overflow, and every
// client reads them exactly), a time outside the stored range, an
// over-long id.
func checkRestoredEntry(n int, e core.Entry) error {
	if e.Seq > core.MaxSeq {
		return core.Errorf(core.CodeInvalid, "restore: entry %d (%.80s) has sequence %d, over the largest the record holds (%d)", n, e.ID, e.Seq, int64(core.MaxSeq))
	}
	if e.TokenEstimate < 0 || e.TokenEstimate > core.MaxSeq {
		return core.Errorf(core.CodeInvalid, "restore: entry %d (%.80s) has token estimate %d, outside 0..%d", n, e.ID, e.TokenEstimate, int64(core.MaxSeq))
	}
	for _, f := range []struct{ name, v string }{{"id", e.ID}, {"parentId", e.ParentID}, {"nativeId", e.NativeID}} {
		if len(f.v) > maxRestoredID {
			return core.Errorf(core.CodeInvalid, "restore: entry %d: %s is %d bytes long, over the limit of %d", n, f.name, len(f.v), maxRestoredID)
		}
	}
	return checkTime(fmt.Sprintf("entry %d (%.80s) createdAt", n, e.ID), e.CreatedAt)
}

// checkTime refuses a time the record cannot store exactly.
func checkTime(what string, t time.Time) error {
	if !core.Representable(t) {
		return core.Errorf(core.CodeInvalid, "restore: %s %s is outside the years the record can hold (1678-2262)", what, t.Format(time.RFC3339Nano))
	}
	return nil
}
