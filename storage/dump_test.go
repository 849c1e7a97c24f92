package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// TestDumpRestoreKeepsABranchedTree: a session with two branches and audit
// records is restored into another database with the same ids, parents,
// sequence numbers, times, head and active branch; restoring it again adds
// nothing, and an entry id taken by another session is a conflict.
func TestDumpRestoreKeepsABranchedTree(t *testing.T) {
	ctx := context.Background()
	src := storagetest.Open(t)
	s := newSession(t, src)
	first := mustAppend(t, src, s.ID, user("one"), assistant("two"), user("three"))
	if _, err := src.AppendTo(ctx, s.ID, first[0].ID, assistant("other two"), user("other three")); err != nil {
		t.Fatal(err)
	}
	if err := src.AppendAudit(ctx, core.AuditRecord{Source: "test", Kind: "k", Entity: s.ID, Body: json.RawMessage(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	d, err := src.Dump(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Entries) != 5 || len(d.Audit) != 1 {
		t.Fatalf("dump: %d entries, %d audit", len(d.Entries), len(d.Audit))
	}
	dst := storagetest.Open(t)
	n, err := dst.Restore(ctx, d)
	if err != nil || n != 5 {
		t.Fatalf("restore: %d, %v", n, err)
	}
	d2, err := dst.Dump(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	d.Audit[0].ID, d2.Audit[0].ID = 0, 0
	if !reflect.DeepEqual(d, d2) {
		t.Fatalf("restored record differs:\n%+v\n%+v", d, d2)
	}
	a, _ := src.ActiveBranch(ctx, s.ID)
	b, err := dst.ActiveBranch(ctx, s.ID)
	if err != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("active branch differs: %v", err)
	}
	// The restored tree is branched: a new append goes under the head.
	if rep, err := dst.Integrity(ctx); err != nil || !rep.Clean() {
		t.Fatalf("integrity: %+v %v", rep, err)
	}
	if n, err := dst.Restore(ctx, d); err != nil || n != 0 {
		t.Fatalf("second restore: %d, %v", n, err)
	}
	other := d
	other.Session.ID = "s_other"
	other.Entries = append([]core.Entry(nil), d.Entries...)
	for i := range other.Entries {
		other.Entries[i].SessionID = "s_other"
	}
	if _, err := dst.Restore(ctx, other); core.ErrorCode(err) != core.CodeConflict {
		t.Fatalf("restore over another session's entries: %v", err)
	}
	// A parent that is not an earlier entry is refused before anything is written.
	bad := d
	bad.Session.ID = "s_bad"
	bad.Entries = []core.Entry{d.Entries[1]}
	bad.Entries[0].SessionID, bad.Entries[0].ID = "s_bad", "e_new"
	if _, err := dst.Restore(ctx, bad); core.ErrorCode(err) != core.CodeInvalid {
		t.Fatalf("orphan parent: %v", err)
	}
	if _, err := dst.GetSession(ctx, "s_bad"); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("a refused restore left a session: %v", err)
	}
}

// TestRestoreStreamAllOrNothing: RestoreStream takes the entries one at a
// time; when the last of 3,000 is refused, nothing of the session stays.
func TestRestoreStreamAllOrNothing(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s := core.Session{ID: "s_big", Harness: "fake"}
	_, err := db.RestoreStream(ctx, s, func(r core.Restorer) error {
		parent := ""
		for i := 1; i <= 3000; i++ {
			e := core.Entry{ID: fmt.Sprintf("e_%05d", i), SessionID: s.ID, ParentID: parent, Seq: int64(i),
				Kind: core.KindUserMessage, Payload: core.Payload(map[string]any{"text": "hi"})}
			if i == 3000 {
				e.Payload = []byte(`{"no":"text"}`)
			}
			if err := r.Entry(e); err != nil {
				return err
			}
			parent = e.ID
		}
		return nil
	})
	if core.ErrorCode(err) != core.CodeInvalid {
		t.Fatalf("restore with a bad last entry: %v, want invalid", err)
	}
	if _, err := db.GetSession(ctx, s.ID); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("a refused restore left the session: %v", err)
	}
	var n int
	if err := db.SQL().QueryRow(`SELECT count(*) FROM entries`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a refused restore left %d entries (%v)", n, err)
	}
}
