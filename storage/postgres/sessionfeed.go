package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/core"
)

var _ core.SessionFeed = (*DB)(nil)

// sessionsChannel is the LISTEN/NOTIFY channel of session changes no
// append carries.
const sessionsChannel = "bridge_sessions"

// Migration 103: an update of a session's row that changes its title, its
// archive flag or its head without adding entries (max_seq unchanged: an
// append, a branch's included, moves the head by adding) notifies with the
// session and the writer's origin, as appends do (migration 101); the
// notice goes out when the transaction commits, never for one rolled back.
var _ = func() int {
	migrations = append(migrations, migration{103, "notify_sessions", `
CREATE FUNCTION bridge_notify_sessions() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
    PERFORM pg_notify('` + sessionsChannel + `', json_build_object('s', NEW.id,
        'o', coalesce(current_setting('bridge.origin', true), ''))::text);
    RETURN NULL;
END
$f$;
CREATE TRIGGER sessions_notify_changes AFTER UPDATE ON sessions FOR EACH ROW
    WHEN (OLD.max_seq = NEW.max_seq AND (OLD.title IS DISTINCT FROM NEW.title
        OR OLD.archived IS DISTINCT FROM NEW.archived OR OLD.head_id IS DISTINCT FROM NEW.head_id))
    EXECUTE FUNCTION bridge_notify_sessions();
`})
	return 0
}()

// Migration 104: each session counts its changes (changes, raised by one
// for every update migration 103's notice is sent for) and keeps the
// origin of the last (changed_by); the notice carries the count ('n').
// A follower whose connection was down reads the counts back and hands
// over every session whose count passed what it had seen (catchUp): a
// session's row is locked by the update, so its count is never behind a
// change that committed. Existing rows get 0 (a constant default: no table
// rewrite).
var _ = func() int {
	migrations = append(migrations, migration{104, "session_changes", `
ALTER TABLE sessions ADD COLUMN changes bigint NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN changed_by text NOT NULL DEFAULT '';
DROP TRIGGER sessions_notify_changes ON sessions;
DROP FUNCTION bridge_notify_sessions();
CREATE FUNCTION bridge_count_session_changes() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
    NEW.changes := OLD.changes + 1;
    NEW.changed_by := coalesce(current_setting('bridge.origin', true), '');
    PERFORM pg_notify('` + sessionsChannel + `', json_build_object('s', NEW.id, 'n', NEW.changes,
        'o', NEW.changed_by)::text);
    RETURN NEW;
END
$f$;
CREATE TRIGGER sessions_count_changes BEFORE UPDATE ON sessions FOR EACH ROW
    WHEN (OLD.max_seq = NEW.max_seq AND (OLD.title IS DISTINCT FROM NEW.title
        OR OLD.archived IS DISTINCT FROM NEW.archived OR OLD.head_id IS DISTINCT FROM NEW.head_id))
    EXECUTE FUNCTION bridge_count_session_changes();
`})
	return 0
}()

// FollowSessions implements core.SessionFeed: it LISTENs on a connection
// of its own and hands fn the session of each notice from another origin.
// A lost connection is made again (after a pause growing to 5 s); once it
// listens again, the changes committed while it was down (notices
// PostgreSQL does not keep) are read back from the sessions' change
// counts and handed over the same way (sessionFollower.catchUp).
func (db *DB) FollowSessions(ctx context.Context, fn func(sessionID string)) error {
	f := &sessionFollower{db: db, fn: fn}
	pause := 100 * time.Millisecond
	for {
		// A lost connection (its error) is made again after the pause.
		_ = f.listen(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(pause*2, 5*time.Second)
	}
}

// sessionFollower is one FollowSessions: seen is, per session, the change
// count last handed over or known (nil until the first connection).
type sessionFollower struct {
	db   *DB
	fn   func(string)
	seen map[string]int64
}

// sessionNotice is the payload of one bridge_sessions notice.
type sessionNotice struct {
	Session string `json:"s"`
	N       int64  `json:"n"`
	Origin  string `json:"o"`
}

// listen runs one LISTEN connection until it fails or ctx ends: the first
// time it notes every session's change count before listening; each time,
// once it listens, it hands over what changed since (catchUp), then what
// each notice names.
func (f *sessionFollower) listen(ctx context.Context) error {
	conn, self, err := f.db.listenConn(ctx, "-follow-sessions")
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if f.seen == nil {
		counts, err := changeCounts(ctx, conn)
		if err != nil {
			return err
		}
		f.seen = map[string]int64{}
		for id, c := range counts {
			f.seen[id] = c.n
		}
	}
	if _, err := conn.Exec(ctx, `LISTEN `+sessionsChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if err := f.catchUp(ctx, conn, self); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var a sessionNotice
		if json.Unmarshal([]byte(n.Payload), &a) != nil || a.Session == "" {
			continue
		}
		if a.N <= f.seen[a.Session] {
			continue // handed over already, by catchUp
		}
		f.seen[a.Session] = a.N
		if self != "" && a.Origin == self {
			continue
		}
		f.fn(a.Session)
	}
}

// changeCount is a session's change count and the origin of its last
// change.
type changeCount struct {
	n  int64
	by string
}

// changeCounts is the change count of every session changed at least once.
func changeCounts(ctx context.Context, conn *pgx.Conn) (map[string]changeCount, error) {
	rows, err := conn.Query(ctx, `SELECT id, changes, changed_by FROM sessions WHERE changes > 0`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]changeCount{}
	for rows.Next() {
		var id string
		var c changeCount
		if err := rows.Scan(&id, &c.n, &c.by); err != nil {
			return nil, err
		}
		out[id] = c
	}
	return out, rows.Err()
}

// catchUp hands over every session whose change count passed what the
// follower had seen, unless the one change it missed was this process's
// own (when it missed several, some may be its own: it hands the session
// over, as telling a client where a session stands twice is harmless).
func (f *sessionFollower) catchUp(ctx context.Context, conn *pgx.Conn, self string) error {
	counts, err := changeCounts(ctx, conn)
	if err != nil {
		return err
	}
	for id, c := range counts {
		seen := f.seen[id]
		if c.n <= seen {
			continue
		}
		f.seen[id] = c.n
		if self != "" && c.by == self && c.n == seen+1 {
			continue
		}
		f.fn(id)
	}
	return nil
}
