package storage

import (
	"database/sql"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// entryStatus tells whether an entry is a session.status entry and, if so,
// the status it records (record.EntryStatus), which the append that
// records it keeps on the session row (sessions.last_status).
func entryStatus(kind core.Kind, payload []byte) (sql.NullString, bool) {
	s, ok := record.EntryStatus(kind, payload)
	return sql.NullString{String: s, Valid: ok}, ok
}
