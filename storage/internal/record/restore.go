package record

import (
	"fmt"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// The checks of a restored session (core.Dumper's Restore and
// RestoreStream): what either store refuses before writing it.

// MaxRestoredID bounds the ids and names of a restored session and its
// entries (Bridge's own are a few dozen bytes).
const MaxRestoredID = 1024

// CheckRestoredSession refuses a session head the record cannot hold as
// it is: no id or harness, an over-long id, or a time outside the range
// the record stores exactly (core.Representable).
func CheckRestoredSession(s core.Session) error {
	if s.ID == "" {
		return core.Errorf(core.CodeInvalid, "restore: the session has no id")
	}
	if s.Harness == "" {
		return core.Errorf(core.CodeInvalid, "restore: session %.80s has no harness", s.ID)
	}
	for _, f := range []struct{ name, v string }{{"sessionId", s.ID}, {"harness", s.Harness}, {"nativeSessionId", s.NativeSessionID},
		{"headId", s.HeadID}, {"latestCheckpointId", s.LatestCheckpointID}, {"preset", s.Preset}, {"model", s.Model},
		{"effort", s.Effort}, {"restoreMode", s.RestoreMode}} {
		if len(f.v) > MaxRestoredID {
			return core.Errorf(core.CodeInvalid, "restore: session %s is %d bytes long, over the limit of %d", f.name, len(f.v), MaxRestoredID)
		}
	}
	if err := checkTime("session createdAt", s.CreatedAt); err != nil {
		return err
	}
	return checkTime("session updatedAt", s.UpdatedAt)
}

// RestoredEntry checks e, the n-th entry (from 1) handed to a restore of
// session sessionID, and returns it with its texts clean and its time as
// the store reads it back: it must belong to the session, have an id and
// a sequence number above last (the one before it), numbers, time and ids
// the record can hold, a size within maxEntry and a known kind's shape.
func RestoredEntry(n int, e core.Entry, sessionID string, last int64, maxEntry int, clean func(string) string) (core.Entry, error) {
	ne := ValidEntry(core.NewEntry{ID: e.ID, Kind: e.Kind, Payload: e.Payload, NativeID: e.NativeID}, clean)
	e.ID, e.Kind, e.Payload, e.NativeID = ne.ID, ne.Kind, ne.Payload, ne.NativeID
	e.SessionID, e.ParentID = clean(e.SessionID), clean(e.ParentID)
	if e.SessionID != sessionID {
		return e, core.Errorf(core.CodeInvalid, "restore: entry %d (%.80s) belongs to session %.80q, not %.80q", n, e.ID, e.SessionID, sessionID)
	}
	if e.ID == "" || e.Seq <= 0 {
		return e, core.Errorf(core.CodeInvalid, "restore: entry %d has no id or sequence number", n)
	}
	if err := checkRestoredEntry(n, e); err != nil {
		return e, err
	}
	if e.Seq <= last {
		return e, core.Errorf(core.CodeInvalid, "restore: entries are not in sequence order at %s", e.ID)
	}
	if err := CheckEntry(ne, maxEntry); err != nil {
		return e, core.E(core.CodeInvalid, fmt.Sprintf("restore: entry %s", e.ID), err)
	}
	e.CreatedAt = Norm(e.CreatedAt)
	return e, nil
}

// checkRestoredEntry refuses an entry whose numbers, time or ids the
// record cannot hold: a sequence number or token estimate outside
// 0..core.MaxSeq (seq+1 of the next append must not overflow, and every
// client reads them exactly), a time outside the stored range, an
// over-long id.
func checkRestoredEntry(n int, e core.Entry) error {
	if e.Seq > core.MaxSeq {
		return core.Errorf(core.CodeInvalid, "restore: entry %d (%.80s) has sequence %d, over the largest the record holds (%d)", n, e.ID, e.Seq, int64(core.MaxSeq))
	}
	if e.TokenEstimate < 0 || e.TokenEstimate > core.MaxSeq {
		return core.Errorf(core.CodeInvalid, "restore: entry %d (%.80s) has token estimate %d, outside 0..%d", n, e.ID, e.TokenEstimate, int64(core.MaxSeq))
	}
	for _, f := range []struct{ name, v string }{{"id", e.ID}, {"parentId", e.ParentID}, {"nativeId", e.NativeID}} {
		if len(f.v) > MaxRestoredID {
			return core.Errorf(core.CodeInvalid, "restore: entry %d: %s is %d bytes long, over the limit of %d", n, f.name, len(f.v), MaxRestoredID)
		}
	}
	return checkTime(fmt.Sprintf("entry %d (%.80s) createdAt", n, e.ID), e.CreatedAt)
}

// checkTime refuses a time the record cannot store exactly.
func checkTime(what string, t time.Time) error {
	if !core.Representable(t) {
		return core.Errorf(core.CodeInvalid, "restore: %s %s is outside the years the record can hold (1678-2262)", what, t.Format(time.RFC3339Nano))
	}
	return nil
}

// CheckRestoredAudit refuses an audit record of a restore of session
// sessionID that has no time, fails CheckAudit, or is about something
// else than the session.
func CheckRestoredAudit(a core.AuditRecord, sessionID string, clean func(string) string) error {
	if a.Time.IsZero() {
		return core.Errorf(core.CodeInvalid, "restore: audit record %.40q has no time", a.Kind)
	}
	if err := CheckAudit(a); err != nil {
		return core.E(core.CodeInvalid, "restore", err)
	}
	if clean(a.Entity) != sessionID {
		return core.Errorf(core.CodeInvalid, "restore: audit record %.40q is about %.80q, not the restored session %s", a.Kind, a.Entity, sessionID)
	}
	return nil
}

// RestoredExisting checks an entry of a restore that the record holds
// already, in session owner at sequence seq: nil when it is the same entry
// (the restore skips it), else a CodeConflict error.
func RestoredExisting(e core.Entry, sessionID, owner string, seq int64) error {
	switch {
	case owner != sessionID:
		return core.Errorf(core.CodeConflict, "restore: entry %q already exists in session %s", e.ID, owner)
	case seq != e.Seq:
		return core.Errorf(core.CodeConflict, "restore: entry %q is already recorded with sequence %d, not %d", e.ID, seq, e.Seq)
	}
	return nil
}

// RestoredNew checks an entry of a restore that the record does not hold:
// a session already present, whose newest sequence number is storeMax,
// only gains entries after its own.
func RestoredNew(e core.Entry, sessionID string, storeMax int64) error {
	if e.Seq <= storeMax {
		return core.Errorf(core.CodeConflict, "restore: entry %s has sequence %d, among the entries session %s already holds (up to %d); a session already present only gains entries after its own",
			e.ID, e.Seq, sessionID, storeMax)
	}
	return nil
}

// RestoredParent checks the parent of a restored entry, at sequence
// parentSeq (found false when the session has no such entry): it must be
// an earlier entry of the session.
func RestoredParent(e core.Entry, parentSeq int64, found bool) error {
	if !found || parentSeq >= e.Seq {
		return core.Errorf(core.CodeInvalid, "restore: entry %s: parent %q is not an earlier entry of the session", e.ID, e.ParentID)
	}
	return nil
}

// Dump collects what a store's DumpStream hands over into one
// core.SessionDump (core.Dumper's Dump).
func Dump(stream func(head func(core.Session) error, to core.Restorer) error) (core.SessionDump, error) {
	d := core.SessionDump{Entries: []core.Entry{}, Audit: []core.AuditRecord{}}
	err := stream(func(s core.Session) error {
		d.Session = s
		return nil
	}, dumpCollector{&d})
	if err != nil {
		return core.SessionDump{}, err
	}
	return d, nil
}

// dumpCollector is the core.Restorer of Dump.
type dumpCollector struct{ d *core.SessionDump }

func (c dumpCollector) Entry(e core.Entry) error {
	c.d.Entries = append(c.d.Entries, e)
	return nil
}

func (c dumpCollector) Audit(a core.AuditRecord) error {
	c.d.Audit = append(c.d.Audit, a)
	return nil
}

// CheckRestoredRefs refuses a restored session whose head or latest
// checkpoint is not one of its entries (count tells how many entries of
// the session have an id).
func CheckRestoredRefs(s core.Session, count func(id string) (int, error)) error {
	for _, ref := range []struct{ what, id string }{{"head", s.HeadID}, {"latestCheckpointId", s.LatestCheckpointID}} {
		if ref.id == "" {
			continue
		}
		n, err := count(ref.id)
		if err != nil {
			return err
		}
		if n == 0 {
			return core.Errorf(core.CodeInvalid, "restore: %s %q is not an entry of the session", ref.what, ref.id)
		}
	}
	return nil
}
