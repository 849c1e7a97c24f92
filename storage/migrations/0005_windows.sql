-- 0005: the window summary of each session (core.Window): what the active
-- branch says since its last boundary (open tool calls and approvals, the
-- checkpoint exchange, the work seen, token and entry counts). Appends
-- under the head fold their entries into it in the same transaction, so
-- checkpoints, compaction, restoration and the controller read one row
-- instead of the whole session. head_id is the head the row describes: a
-- row whose head_id is not the session's head (a branch switch, a session
-- older than this table) is stale and is rebuilt when read.
CREATE TABLE IF NOT EXISTS session_windows (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id),
    head_id    TEXT NOT NULL,
    state      TEXT NOT NULL
);

-- The summary's evidence lists, one row per item (list 0: decisions, 1:
-- files, 2: the decisions of the newest checkpoint), so that an append
-- writes only the items it adds, not the whole list again.
CREATE TABLE IF NOT EXISTS session_window_items (
    session_id TEXT NOT NULL,
    list       INTEGER NOT NULL,
    ord        INTEGER NOT NULL,
    item       TEXT NOT NULL,
    PRIMARY KEY (session_id, list, ord)
);
