package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

var _ core.Dumper = (*DB)(nil)

// Dump implements core.Dumper (DumpStream, collected).
func (db *DB) Dump(ctx context.Context, sessionID string) (core.SessionDump, error) {
	return record.Dump(func(head func(core.Session) error, to core.Restorer) error {
		return db.DumpStream(ctx, sessionID, head, to)
	})
}

// DumpStream implements core.Dumper: the session and its entries by seq
// from one read transaction, each entry handed to to as its row is read,
// then the audit records whose entity is the session, oldest first.
func (db *DB) DumpStream(ctx context.Context, sessionID string, head func(core.Session) error, to core.Restorer) error {
	err := db.read(ctx, func(q *stmtTx) error {
		s, err := getSession(ctx, q, sessionID)
		if err != nil {
			return err
		}
		if err := head(s); err != nil {
			return err
		}
		rows, err := q.QueryContext(ctx, `SELECT `+entryCols+` FROM entries WHERE session_id = ? ORDER BY seq`, sessionID)
		if err != nil {
			return fmt.Errorf("storage: dump %s: %w", sessionID, err)
		}
		defer rows.Close()
		for rows.Next() {
			var r entryRow
			if err := rows.Scan(r.dest()...); err != nil {
				return fmt.Errorf("storage: dump %s: %w", sessionID, err)
			}
			if err := to.Entry(r.entry()); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("storage: dump %s: %w", sessionID, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	audit, err := db.Audit(ctx, sessionID, "")
	if err != nil {
		return err
	}
	for _, a := range audit {
		if err := to.Audit(a); err != nil {
			return err
		}
	}
	return nil
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
	s = record.ValidSession(s, core.ValidText)
	if s.CreatedAt.IsZero() {
		s.CreatedAt = db.now()
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = s.CreatedAt
	}
	if err := record.CheckRestoredSession(s); err != nil {
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
				s.RestoreMode, s.LatestCheckpointID, s.Archived, record.Nanos(s.CreatedAt), record.Nanos(s.UpdatedAt)); err != nil {
				return fmt.Errorf("storage: restore session: %w", err)
			}
			db.fire("session.insert")
		}
		r := &restorer{ctx: ctx, db: db, w: w, s: s, exists: exists > 0, lk: newLinker(w.q, s.ID), track: record.NewTracker(exists == 0)}
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
		err := record.CheckRestoredRefs(s, func(id string) (n int, err error) {
			if err := w.q.QueryRowContext(ctx, `SELECT count(*) FROM entries WHERE id = ? AND session_id = ?`, id, s.ID).Scan(&n); err != nil {
				return 0, fmt.Errorf("storage: restore: %w", err)
			}
			return n, nil
		})
		if err != nil {
			return err
		}
		if _, err := w.q.ExecContext(ctx, `UPDATE sessions SET title = ?, preset = ?, model = ?, effort = ?,
			native_session_id = ?, head_id = ?, restore_mode = ?, latest_checkpoint_id = ?, archived = ?,
			branched = ?, last_status = coalesce(?, last_status), updated_at = ? WHERE id = ?`,
			s.Title, s.Preset, s.Model, s.Effort, s.NativeSessionID, s.HeadID, s.RestoreMode, s.LatestCheckpointID,
			s.Archived, r.branched, r.status, record.Nanos(s.UpdatedAt), s.ID); err != nil {
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
	// transaction (see saveWindow).
	track  record.Tracker
	stored core.Window // the evidence lists as session_window_items holds them
}

// saveWindow writes the summary of the restored session's head: the one
// folded while restoring when it reached that head, else one rebuilt from
// the record (what the first read would have done).
func (r *restorer) saveWindow(head string) error {
	if head == "" {
		return nil
	}
	win, ok := r.track.Summary(head)
	if !ok {
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
	prev := max(r.lastSeq, r.storeMax)
	e, err := record.RestoredEntry(r.n, e, s.ID, r.lastSeq, r.db.maxEntry, core.ValidText)
	if err != nil {
		return err
	}
	r.lastSeq = e.Seq
	var owner string
	var seq int64
	err = w.q.QueryRowContext(ctx, `SELECT session_id, seq FROM entries WHERE id = ?`, e.ID).Scan(&owner, &seq)
	switch {
	case err == nil:
		return record.RestoredExisting(e, s.ID, owner, seq) // nil: already there
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("storage: restore: %w", err)
	}
	if err := record.RestoredNew(e, s.ID, r.storeMax); err != nil {
		return err
	}
	var pseq int64 // 0: a root
	if e.ParentID != "" {
		err := w.q.QueryRowContext(ctx, `SELECT seq FROM entries WHERE id = ? AND session_id = ?`, e.ParentID, s.ID).Scan(&pseq)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("storage: restore: %w", err)
		}
		if err := record.RestoredParent(e, pseq, err == nil); err != nil {
			return err
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
		string(e.Payload), nullStr(e.NativeID), e.TokenEstimate, record.Nanos(e.CreatedAt)); err != nil {
		return core.E(core.CodeConflict, fmt.Sprintf("restore: entry %s", e.ID), err)
	}
	r.db.fire("entry.insert")
	r.track.Track(e)
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
	if err := record.CheckRestoredAudit(a, r.s.ID, core.ValidText); err != nil {
		return err
	}
	return r.w.appendAudit(r.ctx, a)
}
