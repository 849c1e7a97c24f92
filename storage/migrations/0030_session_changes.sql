-- 0030: changes to a session's head fields that no append carries (its
-- title, its archive flag, a head moved to another branch), one row each,
-- for the change feed of other processes on the same data directory
-- (FollowSessions). origin is the writing open's mark, so that a follower
-- leaves out its own process's changes. Rows are small and rare (a rename,
-- an archive); they are kept.
CREATE TABLE session_changes (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  origin     TEXT NOT NULL
);
