-- 0001: the record (sessions and their entry trees) and the audit log.
-- Times are INTEGER Unix nanoseconds (UTC).

CREATE TABLE sessions (
    id                   TEXT PRIMARY KEY,
    harness              TEXT NOT NULL DEFAULT '',
    cwd                  TEXT NOT NULL DEFAULT '',
    title                TEXT NOT NULL DEFAULT '',
    preset               TEXT NOT NULL DEFAULT '',
    model                TEXT NOT NULL DEFAULT '',
    effort               TEXT NOT NULL DEFAULT '',
    native_session_id    TEXT NOT NULL DEFAULT '',
    head_id              TEXT NOT NULL DEFAULT '',
    restore_mode         TEXT NOT NULL DEFAULT '',
    latest_checkpoint_id TEXT NOT NULL DEFAULT '',
    archived             INTEGER NOT NULL DEFAULT 0,
    -- branched is 1 once an entry was added under a parent that already had
    -- a child (or a second root): until then the tree is one chain and the
    -- active branch is every entry with seq <= the head's seq.
    branched             INTEGER NOT NULL DEFAULT 0,
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL
);

CREATE INDEX sessions_updated ON sessions (updated_at DESC, id DESC);
CREATE INDEX sessions_native ON sessions (harness, native_session_id);

CREATE TABLE entries (
    id             TEXT PRIMARY KEY,
    session_id     TEXT NOT NULL REFERENCES sessions (id),
    parent_id      TEXT REFERENCES entries (id),
    seq            INTEGER NOT NULL,
    kind           TEXT NOT NULL,
    payload        TEXT NOT NULL,
    native_id      TEXT,
    token_estimate INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    UNIQUE (session_id, seq)
);

CREATE UNIQUE INDEX entries_native ON entries (session_id, native_id) WHERE native_id IS NOT NULL;

CREATE TABLE audit (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    source  TEXT NOT NULL,
    kind    TEXT NOT NULL,
    entity  TEXT NOT NULL DEFAULT '',
    body    TEXT NOT NULL,
    time    INTEGER NOT NULL
);

CREATE INDEX audit_entity ON audit (entity, id);
