package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// The rules at the record's door: both stores accept and refuse the same
// input. A store's clean function makes a text valid for its text columns
// (core.ValidText, plus what the store's database cannot hold).

// ValidEntries returns entries with every text made valid by clean,
// copying the slice only when something changes.
func ValidEntries(entries []core.NewEntry, clean func(string) string) []core.NewEntry {
	var out []core.NewEntry
	for i, e := range entries {
		c := ValidEntry(e, clean)
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

// ValidEntry is ValidEntries of one entry: its payload valid JSON
// (core.ValidJSON), its ids and kind clean.
func ValidEntry(e core.NewEntry, clean func(string) string) core.NewEntry {
	e.Payload = core.ValidJSON(e.Payload)
	e.ID, e.NativeID, e.Kind = clean(e.ID), clean(e.NativeID), core.Kind(clean(string(e.Kind)))
	return e
}

// ValidSession is a session with every text field clean.
func ValidSession(s core.Session, clean func(string) string) core.Session {
	for _, f := range []*string{&s.ID, &s.Harness, &s.Cwd, &s.Title, &s.Preset, &s.Model, &s.Effort,
		&s.NativeSessionID, &s.HeadID, &s.RestoreMode, &s.LatestCheckpointID} {
		*f = clean(*f)
	}
	return s
}

// CheckEntries checks every entry before anything is written: its size
// against maxEntry (bytes of payload; 0 for no limit) first, so that
// neither the JSON check nor the database sees an oversized payload, then
// its shape. With several entries the error names which one failed.
func CheckEntries(entries []core.NewEntry, maxEntry int) error {
	for i, e := range entries {
		err := CheckEntry(e, maxEntry)
		if err != nil {
			if len(entries) > 1 {
				return &core.Error{Code: core.ErrorCode(err), Message: fmt.Sprintf("entry %d of %d: %v", i+1, len(entries), err)}
			}
			return err
		}
	}
	return nil
}

// CheckEntry is CheckEntries of one entry.
func CheckEntry(e core.NewEntry, maxEntry int) error {
	if maxEntry > 0 && len(e.Payload) > maxEntry {
		return core.Errorf(core.CodeInvalid, "entry %.40s: payload is %d bytes, over the limit of %d bytes per entry (maxEntryBytes)",
			e.Kind, len(e.Payload), maxEntry)
	}
	return e.Validate()
}

// CheckAudit refuses an audit record without a kind, with a time the
// record cannot hold or a body that is not JSON.
func CheckAudit(r core.AuditRecord) error {
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

// Nanos is how a store holds t: Unix nanoseconds; Unix reads it back in
// UTC, and Norm is t as it will read back.
func Nanos(t time.Time) int64 { return t.UnixNano() }

// Unix reads back a time stored by Nanos, in UTC.
func Unix(n int64) time.Time { return time.Unix(0, n).UTC() }

// Norm is t as a store reads it back.
func Norm(t time.Time) time.Time { return Unix(Nanos(t)) }

// EntryTime is when ne happened: its own At (an imported transcript's
// time) when it has one the record can hold, else now.
func EntryTime(ne core.NewEntry, now time.Time) time.Time {
	if !ne.At.IsZero() && core.Representable(ne.At) {
		return Norm(ne.At)
	}
	return Norm(now)
}

// EntryStatus is the status a session.status entry records, as the
// session list shows it (ok is false for other kinds): the payload's
// status string, or its JSON text when it is not a string.
func EntryStatus(kind core.Kind, payload []byte) (status string, ok bool) {
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
	return s, true
}
