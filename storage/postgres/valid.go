package postgres

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// The rules at the record's door are storage's (SQLite's), so that both
// stores accept and refuse the same input.

// validText returns entries with every text valid UTF-8, copying the slice
// only when something changes.
func validText(entries []core.NewEntry) []core.NewEntry {
	var out []core.NewEntry
	for i, e := range entries {
		c := validEntry(e)
		if out == nil && (len(c.Payload) != len(e.Payload) || c.ID != e.ID || c.NativeID != e.NativeID || c.Kind != e.Kind) {
			out = slices.Clone(entries)
		}
		if out != nil {
			out[i] = c
		}
	}
	if out == nil {
		return entries
	}
	return out
}

func validEntry(e core.NewEntry) core.NewEntry {
	e.Payload = core.ValidJSON(e.Payload)
	e.ID, e.NativeID, e.Kind = txt(e.ID), txt(e.NativeID), core.Kind(txt(string(e.Kind)))
	return e
}

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

func validSession(s core.Session) core.Session {
	for _, f := range []*string{&s.ID, &s.Harness, &s.Cwd, &s.Title, &s.Preset, &s.Model, &s.Effort,
		&s.NativeSessionID, &s.HeadID, &s.RestoreMode, &s.LatestCheckpointID} {
		*f = txt(*f)
	}
	return s
}

// validateAll checks every entry before anything is written: its size
// first, then its shape.
func (db *DB) validateAll(entries []core.NewEntry) error {
	for i, e := range entries {
		err := db.checkSize(e)
		if err == nil {
			err = e.Validate()
		}
		if err != nil {
			if len(entries) > 1 {
				return &core.Error{Code: core.ErrorCode(err), Message: fmt.Sprintf("entry %d of %d: %v", i+1, len(entries), err)}
			}
			return err
		}
	}
	return nil
}

// CheckEntries tells whether Append would refuse any of entries (its size
// or shape) without writing anything.
func (db *DB) CheckEntries(entries []core.NewEntry) error { return db.validateAll(entries) }

func (db *DB) checkSize(e core.NewEntry) error {
	if db.maxEntry > 0 && len(e.Payload) > db.maxEntry {
		return core.Errorf(core.CodeInvalid, "entry %.40s: payload is %d bytes, over the limit of %d bytes per entry (maxEntryBytes)",
			e.Kind, len(e.Payload), db.maxEntry)
	}
	return nil
}

func validateAudit(r core.AuditRecord) error {
	if !r.Time.IsZero() && !core.Representable(r.Time) {
		return core.Errorf(core.CodeInvalid, "audit record %.40s: time %s is outside the years the record can hold (1678-2262)", r.Kind, r.Time.Format(time.RFC3339))
	}
	if r.Kind == "" {
		return core.Errorf(core.CodeInvalid, "audit record: kind is required")
	}
	if len(r.Body) > 0 && !json.Valid(r.Body) {
		return core.Errorf(core.CodeInvalid, "audit record %s: body is not valid JSON", r.Kind)
	}
	return nil
}

// nanos stores t as Unix nanoseconds; unix reads it back in UTC.
func nanos(t time.Time) int64    { return t.UnixNano() }
func unix(n int64) time.Time     { return time.Unix(0, n).UTC() }
func norm(t time.Time) time.Time { return unix(nanos(t)) }

// entryTime is when ne happened: its own At when the store can hold it,
// else now.
func entryTime(ne core.NewEntry, now time.Time) time.Time {
	if !ne.At.IsZero() && core.Representable(ne.At) {
		return norm(ne.At)
	}
	return norm(now)
}

// entryStatus is the status a session.status entry records (ok false for
// other kinds).
func entryStatus(kind core.Kind, payload []byte) (string, bool) {
	if kind != core.KindSessionStatus {
		return "", false
	}
	var p struct {
		Status json.RawMessage `json:"status"`
	}
	_ = json.Unmarshal(payload, &p) // validated before it got here
	var s string
	if err := json.Unmarshal(p.Status, &s); err != nil {
		s = string(bytes.TrimSpace(p.Status))
	}
	return txt(s), true
}

// maxRestoredID bounds the ids and names of a restored session and its
// entries.
const maxRestoredID = 1024

func checkRestoredSession(s core.Session) error {
	if s.ID == "" {
		return core.Errorf(core.CodeInvalid, "restore: the session has no id")
	}
	if s.Harness == "" {
		return core.Errorf(core.CodeInvalid, "restore: session %.80s has no harness", s.ID)
	}
	for _, f := range []struct{ name, v string }{{"sessionId", s.ID}, {"harness", s.Harness}, {"nativeSessionId", s.NativeSessionID},
		{"headId", s.HeadID}, {"latestCheckpointId", s.LatestCheckpointID}, {"preset", s.Preset}, {"model", s.Model},
		{"effort", s.Effort}, {"restoreMode", s.RestoreMode}} {
		if len(f.v) > maxRestoredID {
			return core.Errorf(core.CodeInvalid, "restore: session %s is %d bytes long, over the limit of %d", f.name, len(f.v), maxRestoredID)
		}
	}
	if err := checkTime("session createdAt", s.CreatedAt); err != nil {
		return err
	}
	return checkTime("session updatedAt", s.UpdatedAt)
}

func checkRestoredEntry(n int, e core.Entry) error {
	if e.Seq > core.MaxSeq {
		return core.Errorf(core.CodeInvalid, "restore: entry %d (%.80s) has sequence %d, over the largest the record holds (%d)", n, e.ID, e.Seq, int64(core.MaxSeq))
	}
	if e.TokenEstimate < 0 || e.TokenEstimate > core.MaxSeq {
		return core.Errorf(core.CodeInvalid, "restore: entry %d (%.80s) has token estimate %d, outside 0..%d", n, e.ID, e.TokenEstimate, int64(core.MaxSeq))
	}
	for _, f := range []struct{ name, v string }{{"id", e.ID}, {"parentId", e.ParentID}, {"nativeId", e.NativeID}} {
		if len(f.v) > maxRestoredID {
			return core.Errorf(core.CodeInvalid, "restore: entry %d: %s is %d bytes long, over the limit of %d", n, f.name, len(f.v), maxRestoredID)
		}
	}
	return checkTime(fmt.Sprintf("entry %d (%.80s) createdAt", n, e.ID), e.CreatedAt)
}

func checkTime(what string, t time.Time) error {
	if !core.Representable(t) {
		return core.Errorf(core.CodeInvalid, "restore: %s %s is outside the years the record can hold (1678-2262)", what, t.Format(time.RFC3339Nano))
	}
	return nil
}
