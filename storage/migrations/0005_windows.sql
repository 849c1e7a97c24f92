-- 0005: the window summary of each session (core.Window): what the active
-- branch says since its last boundary (open tool calls and approvals, the
-- checkpoint exchange, the work seen, the evidence, token and entry
-- counts). Appends under the head fold their entries into it in the same
-- transaction, so checkpoints, compaction, restoration and the controller
-- read one row instead of the whole session. head_id is the head the row
-- describes: a row whose head_id is not the session's head (a branch switch,
-- a session older than this table) is stale and is rebuilt when read.
CREATE TABLE IF NOT EXISTS session_windows (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id),
    head_id    TEXT NOT NULL,
    state      TEXT NOT NULL
);
