package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/core"
)

var _ core.SessionLeases = (*DB)(nil)

// Migration 100: a live session's lease (core.SessionLeases), in the
// server's clock, so that machines whose clocks differ agree on when a
// lease lapsed. No foreign key: a new session's lease is taken before its
// row is written.
var _ = func() int {
	migrations = append(migrations, migration{100, "session_leases", `
CREATE TABLE session_leases (
    session_id text PRIMARY KEY,
    owner      text NOT NULL,
    expires_at timestamptz NOT NULL
);
`})
	return 0
}()

// AcquireLease implements core.SessionLeases: one conditional upsert, so of
// processes racing for a free or lapsed lease exactly one wins.
func (db *DB) AcquireLease(ctx context.Context, sessionID, owner string, ttl time.Duration) error {
	if sessionID == "" || owner == "" || ttl <= 0 {
		return core.Errorf(core.CodeInvalid, "postgres: a lease needs a session, an owner and a positive duration")
	}
	for range 3 {
		tag, err := db.pool.Exec(ctx, `INSERT INTO session_leases (session_id, owner, expires_at)
			VALUES ($1, $2, clock_timestamp() + make_interval(secs => $3))
			ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
			WHERE session_leases.owner = excluded.owner OR session_leases.expires_at <= clock_timestamp()`,
			sessionID, owner, ttl.Seconds())
		if err != nil {
			return db.errf(err, "lease of session %s", sessionID)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		var holder string
		var exp time.Time
		err = db.pool.QueryRow(ctx, `SELECT owner, expires_at FROM session_leases WHERE session_id = $1`, sessionID).Scan(&holder, &exp)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // released meanwhile: try again
		}
		if err != nil {
			return db.errf(err, "lease of session %s", sessionID)
		}
		return core.LiveElsewhere(sessionID, holder, exp)
	}
	return core.Errorf(core.CodeConflict, "postgres: the lease of session %s changed while taking it; try again", sessionID)
}

// ReleaseLease implements core.SessionLeases.
func (db *DB) ReleaseLease(ctx context.Context, sessionID, owner string) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM session_leases WHERE session_id = $1 AND owner = $2`, sessionID, owner); err != nil {
		return db.errf(err, "release the lease of session %s", sessionID)
	}
	return nil
}
