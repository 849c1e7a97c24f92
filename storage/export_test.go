package storage

import (
	"context"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// Queued is the number of writes ever handed to the writer goroutine.
func Queued(db *DB) int64 { return db.queued.Load() }

// FeedReads is how many times FollowAppends read the entries table.
func FeedReads(db *DB) int64 { return db.feedReads.Load() }

// FeedLooks is how many times FollowAppends looked for changes.
func FeedLooks(db *DB) int64 { return db.feedLooks.Load() }

// GroupStats returns how many group transactions ran and how many calls
// they carried.
func GroupStats(db *DB) (groups, calls int64) { return db.groups.Load(), db.calls.Load() }

// DisableSearchIndex stops db from indexing new entries (for benchmarks).
func DisableSearchIndex(db *DB) { db.noIndex.Store(true) }

// DisableLinks stops db's appends from writing entry_links rows (for
// benchmarks).
func DisableLinks(db *DB) { db.noLinks.Store(true) }

// ListSQL is the query and arguments of one ListSessions page.
func ListSQL(q core.ListQuery, limit int) (string, []any, error) { return listSQL(q, limit) }

// LinkBeforeSQL is the query that seeks a branched page's first entry.
const LinkBeforeSQL = linkBeforeSQL

// MigrationCount is the number of embedded migrations.
func MigrationCount() int {
	ms, err := loadMigrations()
	if err != nil {
		panic(err)
	}
	return len(ms)
}

// LinkedEntryBefore is the jump-pointer seek of a branched history page
// (the entry found, whether the links could tell, how many it followed).
func LinkedEntryBefore(ctx context.Context, db *DB, sessionID string, headSeq, beforeSeq int64) (string, bool, int, error) {
	return linkedEntryBefore(ctx, db.sql, sessionID, headSeq, beforeSeq)
}

// JumpLen is how far back the jump pointer of an entry at depth d reaches.
func JumpLen(d int64) int64 { return jumpLen(d) }

// ReadThroughWriter makes db's reads use the writer pool with read-only
// transactions, as before the read pool (for benchmarks).
func ReadThroughWriter(db *DB, on bool) { db.rd.viaWr.Store(on) }

// SetSearchTimeout changes Options.SearchTimeout of an open database.
func SetSearchTimeout(db *DB, d time.Duration) { db.searchTimeout = d }
