package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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

// FollowSessions implements core.SessionFeed: it LISTENs on a connection
// of its own and hands fn the session of each notice from another origin.
// A lost connection is made again (after a pause growing to 5 s); the
// changes committed while it was down are not read back (unlike appends,
// which FollowAppends reads from the record): a client sees them when it
// next lists or opens the session.
func (db *DB) FollowSessions(ctx context.Context, fn func(sessionID string)) error {
	pause := 100 * time.Millisecond
	for {
		// A lost connection (its error) is made again after the pause.
		_ = db.listenSessions(ctx, fn)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(pause*2, 5*time.Second)
	}
}

// listenSessions runs one LISTEN connection until it fails or ctx ends.
func (db *DB) listenSessions(ctx context.Context, fn func(string)) error {
	conn, self, err := db.listenConn(ctx, "-follow-sessions")
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `LISTEN `+sessionsChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var a struct {
			Session string `json:"s"`
			Origin  string `json:"o"`
		}
		if json.Unmarshal([]byte(n.Payload), &a) != nil || a.Session == "" || self != "" && a.Origin == self {
			continue
		}
		fn(a.Session)
	}
}
