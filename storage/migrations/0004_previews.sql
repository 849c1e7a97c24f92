-- 0004: migration previews and prompt attachments live in the record.
-- Executing a preview is one conditional update of executed_at, so it
-- happens exactly once however many processes try.
CREATE TABLE previews (
    id                TEXT PRIMARY KEY,
    source_session_id TEXT NOT NULL,
    target            TEXT NOT NULL DEFAULT '{}',
    lang              TEXT NOT NULL DEFAULT '',
    path              TEXT NOT NULL DEFAULT '',
    summary           TEXT NOT NULL,
    extra             TEXT NOT NULL DEFAULT '{}',
    created_at        INTEGER NOT NULL,
    executed_at       INTEGER
);

CREATE TABLE attachments (
    sha256     TEXT PRIMARY KEY,
    media_type TEXT NOT NULL,
    bytes      INTEGER NOT NULL,
    data       BLOB NOT NULL,
    created_at INTEGER NOT NULL
);
