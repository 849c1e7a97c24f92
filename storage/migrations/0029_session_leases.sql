-- 0029: a live session's lease (core.SessionLeases). Several Bridge
-- processes may share one data directory: the one running a session's
-- harness holds the row and renews it; the others refuse to drive the
-- session until expires_at (Unix nanoseconds) has passed. No foreign key:
-- a new session's lease is taken before its row is written.
CREATE TABLE session_leases (
  session_id TEXT PRIMARY KEY,
  owner      TEXT NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
