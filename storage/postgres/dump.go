package postgres

import (
	"context"
	"slices"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// Dump implements core.Dumper (DumpStream, collected).
func (db *DB) Dump(ctx context.Context, sessionID string) (core.SessionDump, error) {
	return record.Dump(func(head func(core.Session) error, to core.Restorer) error {
		return db.DumpStream(ctx, sessionID, head, to)
	})
}

// DumpStream implements core.Dumper: one snapshot, the entries by seq,
// each handed to to as its row arrives from the server (pgx reads a
// result row by row), then the audit records whose entity is the
// session, oldest first.
func (db *DB) DumpStream(ctx context.Context, sessionID string, head func(core.Session) error, to core.Restorer) error {
	return db.read(ctx, func(q querier) error {
		s, err := getSession(ctx, db, q, sessionID, false)
		if err != nil {
			return err
		}
		if err := head(s); err != nil {
			return err
		}
		rows, err := q.Query(ctx, `SELECT `+entryCols+` FROM entries WHERE session_id = $1 ORDER BY seq`, sessionID)
		if err != nil {
			return db.errf(err, "dump %s", sessionID)
		}
		defer rows.Close()
		for rows.Next() {
			var r entryRow
			if err := rows.Scan(r.dest()...); err != nil {
				return db.errf(err, "dump %s", sessionID)
			}
			if err := to.Entry(r.entry()); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return db.errf(err, "dump %s", sessionID)
		}
		rows.Close()
		audit, err := audit(ctx, db, q, sessionID, "")
		if err != nil {
			return err
		}
		for _, a := range audit {
			if err := to.Audit(a); err != nil {
				return err
			}
		}
		return nil
	})
}

// Restore implements core.Dumper in one transaction.
func (db *DB) Restore(ctx context.Context, d core.SessionDump) (int, error) {
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

// A restore sends its entries to the server in batches of restoreBatch
// entries, or fewer when their payloads reach restoreBatchBytes: what it
// holds is one batch (an entry's payload may be up to MaxEntryBytes).
const (
	restoreBatch      = 1000
	restoreBatchBytes = 1 << 20
)

// RestoreStream implements core.Dumper in one transaction, with storage's
// checks: every entry's session, id, sequence number, kind, payload and
// parent (in the same session and earlier). Entries are checked and
// written restoreBatch at a time; the session's row is locked for the
// whole restore, so appends from other processes wait for it.
func (db *DB) RestoreStream(ctx context.Context, s core.Session, fill func(r core.Restorer) error) (added int, err error) {
	s = record.ValidSession(s, txt)
	if s.CreatedAt.IsZero() {
		s.CreatedAt = db.now()
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = s.CreatedAt
	}
	if err := record.CheckRestoredSession(s); err != nil {
		return 0, err
	}
	err = db.update(ctx, func(w *txWriter) error {
		tag, err := w.tx.Exec(ctx, `INSERT INTO sessions (id, harness, cwd, title, preset, model, effort,
			native_session_id, head_id, restore_mode, latest_checkpoint_id, archived, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, '', $9, $10, $11, $12, $13) ON CONFLICT (id) DO NOTHING`,
			s.ID, s.Harness, s.Cwd, s.Title, s.Preset, s.Model, s.Effort, s.NativeSessionID,
			s.RestoreMode, s.LatestCheckpointID, s.Archived, record.Nanos(s.CreatedAt), record.Nanos(s.UpdatedAt))
		if err != nil {
			return db.errf(err, "restore session")
		}
		exists := tag.RowsAffected() == 0
		st, err := w.lockState(ctx, s.ID)
		if err != nil {
			return err
		}
		r := &restorer{ctx: ctx, db: db, w: w, s: s, exists: exists, track: record.NewTracker(!exists), harness: st.harness, branched: st.branched}
		if exists {
			r.storeMax = st.maxSeq
		}
		if err := fill(r); err != nil {
			return err
		}
		if err := r.flush(); err != nil {
			return err
		}
		added = r.added
		if r.added > 0 && !slices.Contains(w.appended, s.ID) {
			w.appended = append(w.appended, s.ID)
		}
		if exists {
			// A session already present only gains entries: its head
			// fields stay what this record says.
			if r.added > 0 {
				if _, err := w.tx.Exec(ctx, `UPDATE sessions SET branched = branched OR $2,
					max_seq = greatest(max_seq, $3) WHERE id = $1`, s.ID, r.branched, r.lastSeq); err != nil {
					return db.errf(err, "restore")
				}
			}
			return nil
		}
		err = record.CheckRestoredRefs(s, func(id string) (n int, err error) {
			if err := w.tx.QueryRow(ctx, `SELECT count(*) FROM entries WHERE id = $1 AND session_id = $2`, id, s.ID).Scan(&n); err != nil {
				return 0, db.errf(err, "restore")
			}
			return n, nil
		})
		if err != nil {
			return err
		}
		var status *string
		if r.hasStatus {
			status = &r.status
		}
		if _, err := w.tx.Exec(ctx, `UPDATE sessions SET title = $1, preset = $2, model = $3, effort = $4,
			native_session_id = $5, head_id = $6, restore_mode = $7, latest_checkpoint_id = $8, archived = $9,
			branched = $10, last_status = coalesce($11, last_status), updated_at = $12,
			head_seq = coalesce((SELECT seq FROM entries WHERE id = $6 AND session_id = $13), 0),
			max_seq = coalesce((SELECT max(seq) FROM entries WHERE session_id = $13), 0) WHERE id = $13`,
			s.Title, s.Preset, s.Model, s.Effort, s.NativeSessionID, s.HeadID, s.RestoreMode, s.LatestCheckpointID,
			s.Archived, r.branched, status, record.Nanos(s.UpdatedAt), s.ID); err != nil {
			return db.errf(err, "restore head")
		}
		return r.saveWindow(s.HeadID)
	})
	if err != nil {
		return 0, err
	}
	return added, nil
}

// restorer is core.Restorer inside RestoreStream's transaction.
type restorer struct {
	ctx       context.Context
	db        *DB
	w         *txWriter
	s         core.Session
	harness   string
	exists    bool
	storeMax  int64 // of a session already present: its newest seq before the restore
	n         int
	lastSeq   int64
	branched  bool
	added     int
	status    string
	hasStatus bool

	// pending are the entries not yet written (one batch), pendingBytes
	// their payloads' size. Only they are held; what was written before is
	// read back from the transaction (lookup), so a restore's memory does
	// not grow with the session.
	pending      []core.Entry
	pendingBytes int

	track record.Tracker // the window summary of the restored head (saveWindow)
}

// Entry implements core.Restorer.
func (r *restorer) Entry(e core.Entry) error {
	r.n++
	e, err := record.RestoredEntry(r.n, e, r.s.ID, r.lastSeq, r.db.maxEntry, txt)
	if err != nil {
		return err
	}
	r.lastSeq = e.Seq
	r.pending = append(r.pending, e)
	r.pendingBytes += len(e.Payload)
	if len(r.pending) >= restoreBatch || r.pendingBytes >= restoreBatchBytes {
		return r.flush()
	}
	return nil
}

// flush checks the pending entries against the record and writes the new
// ones.
func (r *restorer) flush() error {
	if len(r.pending) == 0 {
		return nil
	}
	batch := r.pending
	r.pending, r.pendingBytes = r.pending[:0], 0
	existing, known, err := r.lookup(batch)
	if err != nil {
		return err
	}
	// written: the seqs of this batch's new entries, by id (the parents a
	// later entry of the batch may name; those of earlier batches are in
	// known, read from the transaction).
	written := make(map[string]int64, len(batch))
	var fresh []core.Entry
	for _, e := range batch {
		if x, ok := existing[e.ID]; ok {
			if err := record.RestoredExisting(e, r.s.ID, x.session, x.seq); err != nil {
				return err
			}
			continue // already there
		}
		if err := record.RestoredNew(e, r.s.ID, r.storeMax); err != nil {
			return err
		}
		if _, dup := written[e.ID]; dup {
			return core.Errorf(core.CodeConflict, "restore: entry %q appears twice", e.ID)
		}
		// A child of an entry other than the one just before it, or a root
		// after the first entry, is a branch: storage's rule (a gap in the
		// seqs counts as one), entry by entry whatever batch it falls in.
		if e.ParentID != "" {
			pseq, ok := written[e.ParentID]
			if !ok {
				pseq, ok = known[e.ParentID]
			}
			if err := record.RestoredParent(e, pseq, ok); err != nil {
				return err
			}
			if pseq < e.Seq-1 {
				r.branched = true
			}
		} else if e.Seq > 1 {
			r.branched = true
		}
		written[e.ID] = e.Seq
		r.track.Track(e)
		if v, ok := entryStatus(e.Kind, e.Payload); ok {
			r.status, r.hasStatus = v, true
		}
		fresh = append(fresh, e)
	}
	if len(fresh) == 0 {
		return nil
	}
	if err := r.w.execBatch(r.ctx, []stmt{r.w.insertStmt(r.harness, fresh)}, false); err != nil {
		if core.ErrorCode(err) == core.CodeConflict {
			return core.E(core.CodeConflict, "restore: an entry id is taken", err)
		}
		return err
	}
	r.added += len(fresh)
	return nil
}

// recorded is where the record holds an entry.
type recorded struct {
	session string
	seq     int64
}

// lookup reads what the record holds of a batch: its entries already
// recorded (by id, in any session), and the seqs of the parents it names
// that are entries of the session.
func (r *restorer) lookup(batch []core.Entry) (existing map[string]recorded, known map[string]int64, err error) {
	ctx, db, tx := r.ctx, r.db, r.w.tx
	ids := make([]string, 0, len(batch))
	var parents []string
	for _, e := range batch {
		ids = append(ids, e.ID)
		if e.ParentID != "" {
			parents = append(parents, e.ParentID)
		}
	}
	existing = map[string]recorded{}
	rows, err := tx.Query(ctx, `SELECT id, session_id, seq FROM entries WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, nil, db.errf(err, "restore")
	}
	for rows.Next() {
		var id string
		var rw recorded
		if err := rows.Scan(&id, &rw.session, &rw.seq); err != nil {
			rows.Close()
			return nil, nil, db.errf(err, "restore")
		}
		existing[id] = rw
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, db.errf(err, "restore")
	}
	known = map[string]int64{}
	if len(parents) == 0 {
		return existing, known, nil
	}
	rows, err = tx.Query(ctx, `SELECT id, seq FROM entries WHERE session_id = $1 AND id = ANY($2)`, r.s.ID, parents)
	if err != nil {
		return nil, nil, db.errf(err, "restore")
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return nil, nil, db.errf(err, "restore")
		}
		known[id] = seq
	}
	if err := rows.Err(); err != nil {
		return nil, nil, db.errf(err, "restore")
	}
	return existing, known, nil
}

// saveWindow writes the summary of the restored session's head.
func (r *restorer) saveWindow(head string) error {
	if head == "" {
		return nil
	}
	win, ok := r.track.Summary(head)
	if !ok {
		st, err := loadState(r.ctx, r.db, r.w.tx, r.s.ID)
		if err != nil {
			return err
		}
		if win, err = rebuildWindow(r.ctx, r.db, r.w.tx, r.s.ID, st); core.ErrorCode(err) == core.CodeCorrupt {
			return nil
		} else if err != nil {
			return err
		}
	}
	return saveWindow(r.ctx, r.w, r.s.ID, win)
}

// Audit implements core.Restorer: the records are kept only when the
// session is new.
func (r *restorer) Audit(a core.AuditRecord) error {
	if r.exists {
		return nil
	}
	// The entries handed over before it are checked first, as they would
	// be one at a time.
	if err := r.flush(); err != nil {
		return err
	}
	if err := record.CheckRestoredAudit(a, r.s.ID, txt); err != nil {
		return err
	}
	return r.w.appendAudit(r.ctx, a)
}
