package storage

import (
	"bytes"
	"database/sql"
	"encoding/json"

	"github.com/bridge-dev/bridge/core"
)

// entryStatus tells whether an entry is a session.status entry and, if so,
// the status it records (the text of a string, else the JSON of the value;
// "" when there is none), which the append that records it keeps on the
// session row (sessions.last_status).
func entryStatus(kind core.Kind, payload []byte) (sql.NullString, bool) {
	if kind != core.KindSessionStatus {
		return sql.NullString{}, false
	}
	var p struct {
		Status json.RawMessage `json:"status"`
	}
	_ = json.Unmarshal(payload, &p) // validated before it got here
	var s string
	if err := json.Unmarshal(p.Status, &s); err != nil {
		s = string(bytes.TrimSpace(p.Status))
	}
	return sql.NullString{String: s, Valid: true}, true
}
