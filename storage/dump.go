package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bridge-dev/bridge/core"
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

// Restore implements core.Dumper in one write transaction. Every entry is
// checked (known kind, payload, parent in the same session and earlier)
// before it is written; the search indexer picks the entries up after the
// commit, like any append's (their rowids follow every earlier entry's).
func (db *DB) Restore(ctx context.Context, d core.SessionDump) (added int, err error) {
	s := d.Session
	if s.ID == "" {
		return 0, core.Errorf(core.CodeInvalid, "restore: the session has no id")
	}
	for i, e := range d.Entries {
		if e.SessionID != s.ID {
			return 0, core.Errorf(core.CodeInvalid, "restore: entry %d (%s) belongs to session %q, not %q", i+1, e.ID, e.SessionID, s.ID)
		}
		if e.ID == "" || e.Seq <= 0 {
			return 0, core.Errorf(core.CodeInvalid, "restore: entry %d has no id or sequence number", i+1)
		}
		if i > 0 && e.Seq <= d.Entries[i-1].Seq {
			return 0, core.Errorf(core.CodeInvalid, "restore: entries are not in sequence order at %s", e.ID)
		}
		ne := core.NewEntry{Kind: e.Kind, Payload: e.Payload}
		err := db.checkSize(ne)
		if err == nil {
			err = ne.Validate()
		}
		if err != nil {
			return 0, core.E(core.CodeInvalid, fmt.Sprintf("restore: entry %s", e.ID), err)
		}
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
		seqOf := map[string]int64{}
		lk := newLinker(w.q, s.ID)
		branched := false
		// entry_links rows (links.go) go to the entries from the first that
		// branches on; before it the entries are one chain.
		linked := false
		if exists > 0 {
			if err := w.q.QueryRowContext(ctx, `SELECT branched FROM sessions WHERE id = ?`, s.ID).Scan(&linked); err != nil {
				return fmt.Errorf("storage: restore: %w", err)
			}
		}
		last := int64(0)
		for _, e := range d.Entries {
			prev := last
			last = e.Seq
			var owner string
			var seq int64
			err := w.q.QueryRowContext(ctx, `SELECT session_id, seq FROM entries WHERE id = ?`, e.ID).Scan(&owner, &seq)
			switch {
			case err == nil && owner != s.ID:
				return core.Errorf(core.CodeConflict, "restore: entry %q already exists in session %s", e.ID, owner)
			case err == nil && seq != e.Seq:
				return core.Errorf(core.CodeConflict, "restore: entry %q is already recorded with sequence %d, not %d", e.ID, seq, e.Seq)
			case err == nil:
				seqOf[e.ID] = seq
				continue // already there
			case !errors.Is(err, sql.ErrNoRows):
				return fmt.Errorf("storage: restore: %w", err)
			}
			if e.ParentID != "" {
				pseq, ok := seqOf[e.ParentID]
				if !ok {
					return core.Errorf(core.CodeInvalid, "restore: entry %s: parent %q is not an earlier entry of the session", e.ID, e.ParentID)
				}
				if pseq < e.Seq-1 {
					branched = true
				}
			} else if e.Seq > 1 {
				branched = true
			}
			if branched || linked {
				if !linked {
					lk.branch(prev)
				}
				if err := lk.add(ctx, e.Seq, seqOf[e.ParentID]); err != nil {
					return err
				}
				linked = true
			}
			if _, err := w.q.ExecContext(ctx, insertEntrySQL, e.ID, s.ID, nullStr(e.ParentID), e.Seq, string(e.Kind),
				string(e.Payload), nullStr(e.NativeID), e.TokenEstimate, nanos(e.CreatedAt)); err != nil {
				return core.E(core.CodeConflict, fmt.Sprintf("restore: entry %s", e.ID), err)
			}
			db.fire("entry.insert")
			seqOf[e.ID] = e.Seq
			added++
		}
		if err := lk.flush(ctx); err != nil {
			return err
		}
		if added == 0 && exists > 0 {
			return nil
		}
		if s.HeadID != "" {
			if _, ok := seqOf[s.HeadID]; !ok {
				return core.Errorf(core.CodeInvalid, "restore: head %q is not an entry of the session", s.HeadID)
			}
		}
		if _, err := w.q.ExecContext(ctx, `UPDATE sessions SET title = ?, preset = ?, model = ?, effort = ?,
			native_session_id = ?, head_id = ?, restore_mode = ?, latest_checkpoint_id = ?, archived = ?,
			branched = branched OR ?, updated_at = ? WHERE id = ?`,
			s.Title, s.Preset, s.Model, s.Effort, s.NativeSessionID, s.HeadID, s.RestoreMode, s.LatestCheckpointID,
			s.Archived, branched, nanos(s.UpdatedAt), s.ID); err != nil {
			return fmt.Errorf("storage: restore head: %w", err)
		}
		db.fire("session.head")
		if exists == 0 {
			for _, a := range d.Audit {
				if err := w.appendAudit(ctx, a); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return added, err
}
