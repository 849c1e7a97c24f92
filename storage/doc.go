// Package storage is the SQLite implementation of core.Store.
//
// One database file holds every session, its entry tree and the audit log.
// The file is opened in WAL mode with foreign keys on and a busy timeout, so
// several goroutines and several Bridge processes can share it: every write
// transaction takes the write lock when it begins (BEGIN IMMEDIATE), and the
// sequence number of a new entry is computed inside that transaction.
//
// Inside one process, Writer calls made on *DB (outside Update) are group
// committed: a call that finds no write in progress commits at once on its
// own goroutine; calls that arrive while a write is in progress queue for a
// single writer goroutine, which commits all the calls waiting at that
// moment in one transaction. Each call still gets its own result, and a call
// that fails is rolled back to its own savepoint without disturbing the
// others.
//
// Reads go through a second connection pool on the same file, opened on
// the first read and kept read-only by SQLite (PRAGMA query_only; see
// readPool): in WAL mode they never wait for the writer, and each read
// transaction sees every commit made before it began.
//
// Reads of a session's branch (ActiveBranch, History) follow parent links
// and check each one. While a session has never branched, its tree is one
// chain and the walk reads the (session_id, seq) index backwards, so a
// History page costs the same on a session of 100,000 entries as on a short
// one; on a branched session, paging with beforeSeq walks from the head.
//
// What the store does to the record without SQL (the rules at its door,
// an entry's searchable text, the window summary's fold and rebuild, the
// checks of a walk along parent links) is storage/internal/record's, which
// storage/postgres imports too, so that both stores accept, index and walk
// the record alike.
//
// Durability: the database runs with synchronous=NORMAL in WAL mode. A
// committed transaction survives a crash of the process; a power cut may lose
// the last commits but never leaves a half-written one. Set
// Options.FullSync to sync on every commit.
//
// # Reads
//
// Reads cost what they return, not what came before. They run on a second
// connection pool of the same file, opened on the first read (opening the
// database does not pay for it) with PRAGMA query_only, so SQLite refuses a
// write made on a read path; in WAL mode these readers never wait for the
// writer, and each read transaction sees every commit made before it began.
// (A read-only transaction on the writer's pool made the driver turn
// query_only on and off around it, which expires the connection's prepared
// statements: every read compiled its statements again.) The LIMIT of a
// history page, a list page and a summary rebuild's batch is written into
// the statement's text (in a few size classes), not bound: SQLite plans with
// a bound LIMIT's value and so compiled the statement again on every call. A
// page of the session list is one index range per archived value
// (sessions_list, or sessions_harness_list with a harness), read newest
// first from the cursor (updated_at, id) < (?, ?); with archived sessions
// the two ranges are merged without sorting. A history page of a session
// that never branched reads its entries by (session_id, seq). On a branched
// session each entry after the first branch also has an entry_links row
// (parent's seq, depth, and a skew-binary jump pointer to an ancestor),
// written in the transaction that adds the entry; the entries before it are
// one chain whose rows are implicit (seq s: parent s-1, depth s-1), so a
// session that never branches writes none. Following jumps finds a page's
// first entry in O(log depth) seeks, then the page is walked by parent
// links. Migration 6 backfills the sessions that had branched. An entry
// under a broken link has no row, and its pages fall back to the walk from
// the head, which names the problem.
//
// Pages forwards (HistoryAfter) and around an entry (HistoryAround, a
// backwards half page ending at the entry and a forwards one after it, in
// one read) cost the same: on a session that never branched they read the
// (session_id, seq) index upwards from the seq; on a branched one the
// branch's entries in a window of seqs are walked back from the jump
// pointers' answer for the window's top, the next window sized from how
// many seqs the last one's messages took (storage/internal/record,
// ForwardWindows).
//
// # The write-ahead log
//
// The write-ahead log is copied into the database by a background
// checkpointer (PASSIVE, once writing pauses for 250 ms, or at least every
// 60 s under sustained writing), never by a commit. Its file is bounded:
// journal_size_limit (32 MiB, storage.JournalSizeLimit) cuts it back
// whenever SQLite restarts it after a complete checkpoint, and after a bulk
// write (an import or a discovery) storage.DB.AfterBulk runs a TRUNCATE
// checkpoint, which leaves it empty; the service then returns the memory the
// import used to the operating system (debug.FreeOSMemory), so a long-
// running sidecar is back at its idle size.
package storage
