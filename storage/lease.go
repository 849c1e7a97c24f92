package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// AcquireLease implements core.SessionLeases: one conditional upsert, so
// of two processes racing for a lapsed lease exactly one wins.
func (db *DB) AcquireLease(ctx context.Context, sessionID, owner string, ttl time.Duration) error {
	if sessionID == "" || owner == "" || ttl <= 0 {
		return core.Errorf(core.CodeInvalid, "storage: a lease needs a session, an owner and a positive duration")
	}
	return db.submit(ctx, func(ctx context.Context, w *txWriter) error {
		now := db.now()
		res, err := w.q.ExecContext(ctx, `INSERT INTO session_leases (session_id, owner, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
			WHERE session_leases.owner = excluded.owner OR session_leases.expires_at <= ?`,
			sessionID, owner, record.Nanos(now.Add(ttl)), record.Nanos(now))
		if err != nil {
			return fmt.Errorf("storage: lease of session %s: %w", sessionID, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("storage: lease of session %s: %w", sessionID, err)
		} else if n == 1 {
			return nil
		}
		var holder string
		var exp int64
		err = w.q.QueryRowContext(ctx, `SELECT owner, expires_at FROM session_leases WHERE session_id = ?`, sessionID).Scan(&holder, &exp)
		if errors.Is(err, sql.ErrNoRows) {
			return core.Errorf(core.CodeConflict, "storage: lease of session %s changed while taking it; try again", sessionID)
		}
		if err != nil {
			return fmt.Errorf("storage: lease of session %s: %w", sessionID, err)
		}
		return core.LiveElsewhere(sessionID, holder, record.Unix(exp))
	})
}

// ReleaseLease implements core.SessionLeases.
func (db *DB) ReleaseLease(ctx context.Context, sessionID, owner string) error {
	return db.submit(ctx, func(ctx context.Context, w *txWriter) error {
		if _, err := w.q.ExecContext(ctx, `DELETE FROM session_leases WHERE session_id = ? AND owner = ?`, sessionID, owner); err != nil {
			return fmt.Errorf("storage: release the lease of session %s: %w", sessionID, err)
		}
		return nil
	})
}
