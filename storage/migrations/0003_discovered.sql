-- 0003: the harness transcripts discovery imported (bridge import
-- --discover), with the size and modification time seen, so that the next
-- discovery reads only new or changed files.
CREATE TABLE discovered_files (
    harness    TEXT NOT NULL,
    path       TEXT NOT NULL,
    size       INTEGER NOT NULL,
    mtime      INTEGER NOT NULL,
    session_id TEXT NOT NULL DEFAULT '',
    seen_at    INTEGER NOT NULL,
    PRIMARY KEY (harness, path)
);
