package postgres

import (
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// The rules at the record's door are record's, so that both stores accept
// and refuse the same input; txt is what this store adds.

// txt is core.ValidText for a PostgreSQL text column, which cannot hold
// the NUL character: each NUL becomes U+FFFD. (Payloads are JSON, where a
// NUL is always escaped, so they never change.)
func txt(s string) string {
	s = core.ValidText(s)
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}

// CheckEntries tells whether Append would refuse any of entries (its size
// or shape) without writing anything.
func (db *DB) CheckEntries(entries []core.NewEntry) error {
	return record.CheckEntries(entries, db.maxEntry)
}

// entryStatus is the status a session.status entry records
// (record.EntryStatus), as this store can hold it.
func entryStatus(kind core.Kind, payload []byte) (string, bool) {
	s, ok := record.EntryStatus(kind, payload)
	return txt(s), ok
}
