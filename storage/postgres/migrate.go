package postgres

import (
	"context"
	"fmt"
	"sort"

	"github.com/bridge-dev/bridge/core"
)

// migration is one schema step, applied in its own transaction and
// recorded in bridge_migrations.
type migration struct {
	version int
	name    string
	sql     string
}

// migrationLock is the key of the advisory lock migrations run under
// ("bridge.migrate" as a number).
const migrationLock int64 = 0x6272696467652e6d

// migrations are the schema's steps. Times are Unix nanoseconds (bigint,
// UTC), as in the SQLite record, so that an export round-trips exactly.
// Another file of this package may add a step (its own version number) in
// a package-level var initialiser; they are applied in version order.
var migrations = []migration{{1, "init", `
CREATE TABLE sessions (
    id                   text PRIMARY KEY,
    harness              text NOT NULL DEFAULT '',
    cwd                  text NOT NULL DEFAULT '',
    title                text NOT NULL DEFAULT '',
    preset               text NOT NULL DEFAULT '',
    model                text NOT NULL DEFAULT '',
    effort               text NOT NULL DEFAULT '',
    native_session_id    text NOT NULL DEFAULT '',
    head_id              text NOT NULL DEFAULT '',
    restore_mode         text NOT NULL DEFAULT '',
    latest_checkpoint_id text NOT NULL DEFAULT '',
    archived             boolean NOT NULL DEFAULT false,
    -- branched: an entry was added under a parent that already had a
    -- child (or a second root); until then the tree is one chain.
    branched             boolean NOT NULL DEFAULT false,
    last_status          text NOT NULL DEFAULT '',
    created_at           bigint NOT NULL,
    updated_at           bigint NOT NULL,
    -- What a write needs, kept on the row it locks: the head's seq and the
    -- newest seq, and the window summary (core.Window, without its
    -- evidence lists) with the head it describes. A summary whose
    -- window_head is not head_id is stale and rebuilt when read.
    head_seq             bigint NOT NULL DEFAULT 0,
    max_seq              bigint NOT NULL DEFAULT 0,
    window_head          text NOT NULL DEFAULT '',
    window_state         text NOT NULL DEFAULT ''
);
CREATE INDEX sessions_list ON sessions (archived, updated_at, id);
CREATE INDEX sessions_harness_list ON sessions (harness, archived, updated_at, id);
CREATE INDEX sessions_native ON sessions (harness, native_session_id);

-- Entries with the searchable text of each as a tsvector (NULL for
-- entries without searchable text), written in the append's transaction.
CREATE TABLE entries (
    rowid          bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id             text PRIMARY KEY,
    session_id     text NOT NULL REFERENCES sessions (id),
    parent_id      text REFERENCES entries (id),
    seq            bigint NOT NULL,
    kind           text NOT NULL,
    payload        text NOT NULL,
    native_id      text,
    token_estimate bigint NOT NULL DEFAULT 0,
    created_at     bigint NOT NULL,
    search         tsvector,
    UNIQUE (session_id, seq)
);
CREATE UNIQUE INDEX entries_native ON entries (session_id, native_id) WHERE native_id IS NOT NULL;
CREATE INDEX entries_search ON entries USING gin (search);

CREATE TABLE audit (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source  text NOT NULL,
    kind    text NOT NULL,
    entity  text NOT NULL DEFAULT '',
    body    text NOT NULL,
    time    bigint NOT NULL
);
CREATE INDEX audit_entity ON audit (entity, id);

CREATE TABLE discovered_files (
    harness    text NOT NULL,
    path       text NOT NULL,
    size       bigint NOT NULL,
    mtime      bigint NOT NULL,
    session_id text NOT NULL DEFAULT '',
    seen_at    bigint NOT NULL,
    PRIMARY KEY (harness, path)
);

CREATE TABLE previews (
    id                text PRIMARY KEY,
    source_session_id text NOT NULL,
    target            text NOT NULL DEFAULT '{}',
    lang              text NOT NULL DEFAULT '',
    path              text NOT NULL DEFAULT '',
    summary           text NOT NULL,
    extra             text NOT NULL DEFAULT '{}',
    created_at        bigint NOT NULL,
    executed_at       bigint
);

CREATE TABLE attachments (
    sha256     text PRIMARY KEY,
    media_type text NOT NULL,
    bytes      bigint NOT NULL,
    data       bytea NOT NULL,
    created_at bigint NOT NULL
);

-- The window summaries' evidence lists, one row per item (list 0:
-- decisions, 1: files, 2: the decisions of the newest checkpoint).
CREATE TABLE session_window_items (
    session_id text NOT NULL,
    list       integer NOT NULL,
    ord        integer NOT NULL,
    item       text NOT NULL,
    PRIMARY KEY (session_id, list, ord)
);

-- The usage ledger: one row per usage.reported entry, written in the
-- append's transaction; session/usage sums it by group.
CREATE TABLE usage_ledger (
    entry_rowid        bigint PRIMARY KEY,
    session_id         text   NOT NULL,
    harness            text   NOT NULL,
    model              text   NOT NULL,
    at                 bigint NOT NULL,
    input_tokens       bigint NOT NULL,
    output_tokens      bigint NOT NULL,
    cache_read_tokens  bigint NOT NULL,
    cache_write_tokens bigint NOT NULL,
    cost_usd           double precision,
    estimated          boolean NOT NULL
);
CREATE INDEX usage_ledger_at ON usage_ledger (at);
CREATE INDEX usage_ledger_session ON usage_ledger (session_id, at);

CREATE TABLE session_repos (
    session_id   text PRIMARY KEY REFERENCES sessions (id),
    repo         text    NOT NULL,
    worktree     text    NOT NULL DEFAULT '',
    branch       text    NOT NULL DEFAULT '',
    base_commit  text    NOT NULL,
    removed      boolean NOT NULL DEFAULT false,
    source_dirty boolean NOT NULL DEFAULT false
);
`}}

// KnownSchemaVersion is the highest schema version this Bridge can apply.
func KnownSchemaVersion() int {
	v := 0
	for _, m := range migrations {
		v = max(v, m.version)
	}
	return v
}

// migrate applies the pending migrations while holding the advisory lock
// on one connection: a second process opening the database at the same
// moment waits for the first to finish, then finds nothing to do.
func (db *DB) migrate(ctx context.Context) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return db.connErr("connect", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return db.errf(err, "take the migration lock")
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx)) // closing the session frees the lock
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS bridge_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at bigint NOT NULL)`); err != nil {
		return db.errf(err, "create bridge_migrations")
	}
	applied := map[int]bool{}
	rows, err := conn.Query(ctx, `SELECT version FROM bridge_migrations`)
	if err != nil {
		return db.errf(err, "schema versions")
	}
	current := 0
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return db.errf(err, "schema versions")
		}
		applied[v] = true
		current = max(current, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return db.errf(err, "schema versions")
	}
	if known := KnownSchemaVersion(); current > known {
		return core.Errorf(core.CodeUnsupported,
			"postgres: %s has schema version %d but this Bridge knows only up to %d; it was written by a newer Bridge, upgrade Bridge to open it",
			db.where, current, known)
	}
	ms := append([]migration(nil), migrations...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			return db.errf(err, "migration %d_%s: begin", m.version, m.name)
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			_ = tx.Rollback(ctx)
			return db.errf(err, "migration %d_%s", m.version, m.name)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO bridge_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
			m.version, m.name, db.now().UnixNano()); err != nil {
			_ = tx.Rollback(ctx)
			return db.errf(err, "migration %d_%s: record", m.version, m.name)
		}
		if err := tx.Commit(ctx); err != nil {
			return db.errf(err, "migration %d_%s: commit", m.version, m.name)
		}
	}
	return nil
}

// String is for messages.
func (m migration) String() string { return fmt.Sprintf("%d_%s", m.version, m.name) }
