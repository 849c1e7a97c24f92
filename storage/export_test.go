package storage

// Queued is the number of writes ever handed to the writer goroutine.
func Queued(db *DB) int64 { return db.queued.Load() }

// GroupStats returns how many group transactions ran and how many calls
// they carried.
func GroupStats(db *DB) (groups, calls int64) { return db.groups.Load(), db.calls.Load() }

// DisableSearchIndex stops db from indexing new entries (for benchmarks).
func DisableSearchIndex(db *DB) { db.noIndex.Store(true) }

// MigrationCount is the number of embedded migrations.
func MigrationCount() int {
	ms, err := loadMigrations()
	if err != nil {
		panic(err)
	}
	return len(ms)
}
