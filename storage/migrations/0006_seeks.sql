-- 0006: a page of the session list and a page of a branched session's
-- history are index seeks, whatever the number of sessions or the distance
-- from the head.

-- The session list reads one index range per archived value (and harness),
-- newest first, from the cursor on: (updated_at, id) < (?, ?) is a seek.
DROP INDEX IF EXISTS sessions_updated;
CREATE INDEX sessions_list ON sessions (archived, updated_at, id);
CREATE INDEX sessions_harness_list ON sessions (harness, archived, updated_at, id);

-- entry_links is each entry's place in its session's tree: its parent's
-- seq, its depth (0 for a root) and a jump pointer, the seq of an ancestor
-- chosen by the skew-binary rule (a root jumps to itself; an entry jumps to
-- its parent's jump target's own target when the parent's two jumps span
-- equal depths, else to its parent). Following jumps while they stay at or
-- above a seq finds the newest ancestor below that seq in O(log depth)
-- seeks, because seqs grow from parent to child. A session's entries
-- before it first branched are one chain (the entry at seq s has parent
-- s-1 and depth s-1), so their rows are implicit and none is written: the
-- row at seq 0 of a branched session holds the length of that chain in
-- jump_seq, and each later entry gets its row in the transaction that adds
-- it (storage's linker, on append and restore). A session that never
-- branched has no rows. An entry whose parent is missing, of another
-- session, not older, or itself without a row gets no row; readers then
-- walk the parent links as before, which names the problem. The sessions
-- that branched before this migration get a row for every entry from the
-- Go step that runs with it (storage.backfillLinks).
CREATE TABLE entry_links (
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    parent_seq INTEGER,
    depth      INTEGER NOT NULL,
    jump_seq   INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
