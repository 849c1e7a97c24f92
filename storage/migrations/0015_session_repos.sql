-- 0015: each session started in a git repository has a row: the
-- repository, the commit it started from and, for a session with a
-- worktree of its own, the worktree and its branch (ARCHITECTURE.md,
-- Worktrees and diffs). session/diff compares against base_commit; the
-- session list shows the branch.
CREATE TABLE session_repos (
    session_id  TEXT PRIMARY KEY REFERENCES sessions (id),
    repo        TEXT    NOT NULL,
    worktree    TEXT    NOT NULL DEFAULT '',
    branch      TEXT    NOT NULL DEFAULT '',
    base_commit TEXT    NOT NULL,
    removed     INTEGER NOT NULL DEFAULT 0,
    source_dirty INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
