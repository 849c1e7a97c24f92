package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/core"
)

var _ core.ChangeFeed = (*DB)(nil)

// appendsChannel is the LISTEN/NOTIFY channel of committed appends.
const appendsChannel = "bridge_appends"

// Migration 101: every statement that inserts entries notifies, once per
// session it wrote to, with the session, the range of sequence numbers and
// the writer's origin (the bridge.origin setting of its connection,
// WithOrigin). NOTIFY is transactional: the notice goes out when the
// transaction commits, never for one rolled back, and the entries it names
// are visible to whoever reads them after receiving it.
var _ = func() int {
	migrations = append(migrations, migration{101, "notify_appends", `
CREATE FUNCTION bridge_notify_appends() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE r record;
BEGIN
    FOR r IN SELECT session_id, min(seq) AS lo, max(seq) AS hi FROM bridge_new_entries GROUP BY session_id LOOP
        PERFORM pg_notify('` + appendsChannel + `', json_build_object('s', r.session_id, 'lo', r.lo, 'hi', r.hi,
            'o', coalesce(current_setting('bridge.origin', true), ''))::text);
    END LOOP;
    RETURN NULL;
END
$f$;
CREATE TRIGGER entries_notify_appends AFTER INSERT ON entries
    REFERENCING NEW TABLE AS bridge_new_entries
    FOR EACH STATEMENT EXECUTE FUNCTION bridge_notify_appends();
`})
	// Migration 102: each entry keeps the origin of the process that wrote
	// it (the bridge.origin setting of its connection; NULL without one), so
	// that a follower reading back what it missed while its connection was
	// down can leave out its own process's appends, as the notices do.
	// Existing rows get no value (a constant default: no table rewrite).
	migrations = append(migrations, migration{102, "entries_origin", `
ALTER TABLE entries ADD COLUMN origin text;
ALTER TABLE entries ALTER COLUMN origin SET DEFAULT nullif(current_setting('bridge.origin', true), '');
`})
	return 0
}()

// WithOrigin returns the connection URL with this process's origin added
// (the connection option bridge.origin), which the notice of every append
// it commits carries: FollowAppends hands a process only what others
// appended. origin is letters, digits, '-', '_' and '.'.
func WithOrigin(rawURL, origin string) (string, error) {
	for _, r := range origin {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return "", core.Errorf(core.CodeInvalid, "postgres: origin %s: only letters, digits, '-', '_' and '.'", core.Quote(origin))
		}
	}
	u, err := url.Parse(rawURL)
	if err != nil || origin == "" {
		return "", core.Errorf(core.CodeInvalid, "postgres: cannot add an origin to the connection URL (want postgres://USER@HOST/DATABASE)")
	}
	q := u.Query()
	opt := strings.TrimSpace(q.Get("options") + " -c bridge.origin=" + origin)
	q.Set("options", opt)
	// Spaces as %20: pgx reads a '+' in the query as itself.
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	return u.String(), nil
}

// appendNotice is the payload of one notice.
type appendNotice struct {
	Session string `json:"s"`
	Lo      int64  `json:"lo"`
	Hi      int64  `json:"hi"`
	Origin  string `json:"o"`
}

// FollowAppends implements core.ChangeFeed: it LISTENs on a connection of
// its own (not one of the pool's) and, for each notice from another origin,
// reads the entries it names and hands them to fn. A lost connection is
// made again (after a pause growing to 5 s); once it listens again, what
// other processes committed while it was down (notices PostgreSQL does not
// keep) is read from the record and handed over the same way: every
// session whose last sequence number passed what the follower had seen.
func (db *DB) FollowAppends(ctx context.Context, fn func(entries []core.Entry)) error {
	return db.follow(ctx, fn, nil)
}

// FollowAppendsLogged is FollowAppends reporting lost connections to logf.
func (db *DB) FollowAppendsLogged(ctx context.Context, fn func(entries []core.Entry), logf func(string)) error {
	return db.follow(ctx, fn, logf)
}

// follower is one FollowAppends: seen is, per session, the last sequence
// number handed over or known to be this process's own (or already there
// when the follower started).
type follower struct {
	db   *DB
	fn   func([]core.Entry)
	seen map[string]int64
}

func (db *DB) follow(ctx context.Context, fn func(entries []core.Entry), logf func(string)) error {
	f := &follower{db: db, fn: fn}
	pause := 100 * time.Millisecond
	for {
		err := f.listen(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if logf != nil {
			logf(fmt.Sprintf("postgres: following other processes' appends stopped (%v); reconnecting, then reading what was appended meanwhile from the record", scrub(err.Error(), db.password)))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(pause*2, 5*time.Second)
	}
}

// listen runs one LISTEN connection until it fails or ctx ends: the first
// time it notes where every session stands before listening; each time,
// once it listens, it hands over what was committed since it last knew
// (catchUp), then what each notice names.
func (f *follower) listen(ctx context.Context) error {
	// Named apart in pg_stat_activity: "bridge-follow" by default.
	conn, self, err := f.db.listenConn(ctx, "-follow")
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if f.seen == nil {
		seen, err := sessionHeads(ctx, conn)
		if err != nil {
			return err
		}
		f.seen = seen
	}
	if _, err := conn.Exec(ctx, `LISTEN `+appendsChannel); err != nil {
		return err
	}
	// Listening: whatever commits from now on is noticed; what committed
	// before and was not seen is read now.
	if err := f.catchUp(ctx, conn, self); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var a appendNotice
		if json.Unmarshal([]byte(n.Payload), &a) != nil || a.Session == "" {
			continue
		}
		lo := max(a.Lo, f.seen[a.Session]+1)
		if lo > a.Hi {
			continue // handed over already, by catchUp
		}
		f.seen[a.Session] = a.Hi
		if self != "" && a.Origin == self {
			continue
		}
		es, err := f.db.entriesBetween(ctx, a.Session, lo, a.Hi)
		if err != nil {
			return err
		}
		if len(es) > 0 {
			f.fn(es)
		}
	}
}

// listenConn opens a connection of the follower's own (the pool's
// settings, its application name ending in suffix) and reads this
// process's origin on it (bridge.origin, WithOrigin; "" when none is set),
// so that notices this process caused can be told apart.
func (db *DB) listenConn(ctx context.Context, suffix string) (*pgx.Conn, string, error) {
	cfg := db.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] += suffix
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, "", err
	}
	var self string
	if err := conn.QueryRow(ctx, `SELECT coalesce(current_setting('bridge.origin', true), '')`).Scan(&self); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, "", err
	}
	return conn, self, nil
}

// sessionHeads is every session's last sequence number.
func sessionHeads(ctx context.Context, conn *pgx.Conn) (map[string]int64, error) {
	rows, err := conn.Query(ctx, `SELECT id, max_seq FROM sessions`)
	if err != nil {
		return nil, err
	}
	seen := map[string]int64{}
	for rows.Next() {
		var id string
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return nil, err
		}
		seen[id] = seq
	}
	return seen, rows.Err()
}

// catchUp hands over, for every session whose last sequence number passed
// what the follower has seen, the entries after that point that another
// origin wrote (a session's entries commit in sequence order: its row is
// locked from the sequence number's choice to the commit).
func (f *follower) catchUp(ctx context.Context, conn *pgx.Conn, self string) error {
	heads, err := sessionHeads(ctx, conn)
	if err != nil {
		return err
	}
	for id, hi := range heads {
		lo := f.seen[id] + 1
		if lo > hi {
			continue
		}
		rows, err := conn.Query(ctx, `SELECT `+entryCols+` FROM entries
			WHERE session_id = $1 AND seq BETWEEN $2 AND $3 AND ($4 = '' OR origin IS DISTINCT FROM $4)
			ORDER BY seq`, id, lo, hi, self)
		if err != nil {
			return err
		}
		var es []core.Entry
		for rows.Next() {
			var r entryRow
			if err := rows.Scan(r.dest()...); err != nil {
				rows.Close()
				return err
			}
			es = append(es, r.entry())
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		f.seen[id] = hi
		if len(es) > 0 {
			f.fn(es)
		}
	}
	return nil
}

// entriesBetween reads a session's entries with lo <= seq <= hi, in order.
func (db *DB) entriesBetween(ctx context.Context, sessionID string, lo, hi int64) ([]core.Entry, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+entryCols+` FROM entries WHERE session_id = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq`, sessionID, lo, hi)
	if err != nil {
		return nil, db.errf(err, "read the entries another process appended to session %s", sessionID)
	}
	defer rows.Close()
	var out []core.Entry
	for rows.Next() {
		var r entryRow
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, db.errf(err, "read the entries another process appended to session %s", sessionID)
		}
		out = append(out, r.entry())
	}
	if err := rows.Err(); err != nil {
		return nil, db.errf(err, "read the entries another process appended to session %s", sessionID)
	}
	return out, nil
}
