package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/bridge-dev/bridge/core"
)

var _ core.SessionFeed = (*DB)(nil)

// newOrigin is an open's mark on the session changes it writes.
func newOrigin() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// noteSessionChange records, in the write transaction, that a head field
// of sessionID changed (title, archive flag, head moved) for other
// processes' FollowSessions.
func (w *txWriter) noteSessionChange(ctx context.Context, sessionID string) error {
	if _, err := w.q.ExecContext(ctx, `INSERT INTO session_changes (session_id, origin) VALUES (?, ?)`, sessionID, w.db.origin); err != nil {
		return fmt.Errorf("storage: note a change of session %s: %w", sessionID, err)
	}
	return nil
}

// FollowSessions implements core.SessionFeed for several processes sharing
// one data directory, as FollowAppends does for entries: every FollowPoll
// it asks whether the file changed (PRAGMA data_version) and, when it did,
// reads the session changes past the last one it saw, handing fn the
// session of each that another open of the file (another process) wrote,
// once per session and look. It returns ctx's error when ctx ends; a
// failed read is tried again at the next look.
func (db *DB) FollowSessions(ctx context.Context, fn func(sessionID string)) error {
	rq, err := db.rq()
	if err != nil {
		return err
	}
	var seen int64
	if err := rq.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM session_changes`).Scan(&seen); err != nil {
		return fmt.Errorf("storage: follow session changes: %w", err)
	}
	return db.everyChange(ctx, nil, func() error {
		next, err := db.sessionChanges(ctx, seen, fn)
		seen = next
		return err
	})
}

// sessionChanges hands fn the sessions other opens changed after seq seen
// and returns the last seq read.
func (db *DB) sessionChanges(ctx context.Context, seen int64, fn func(string)) (int64, error) {
	rq, err := db.rq()
	if err != nil {
		return seen, err
	}
	rows, err := rq.QueryContext(ctx, `SELECT seq, session_id, origin FROM session_changes WHERE seq > ? ORDER BY seq`, seen)
	if err != nil {
		return seen, err
	}
	var ids []string
	done := map[string]bool{}
	for rows.Next() {
		var seq int64
		var id, origin string
		if err := rows.Scan(&seq, &id, &origin); err != nil {
			rows.Close()
			return seen, err
		}
		seen = seq
		if origin != db.origin && !done[id] {
			done[id] = true
			ids = append(ids, id)
		}
	}
	err = rows.Err()
	rows.Close()
	for _, id := range ids {
		fn(id)
	}
	return seen, err
}
