package storage_test

import (
	"context"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

func status(s string) core.NewEntry {
	return core.NewEntry{Kind: core.KindSessionStatus, Payload: core.Payload(map[string]any{"status": s, "exitCode": 0})}
}

func lastStatus(t *testing.T, db *storage.DB, sid string) string {
	t.Helper()
	s, err := db.GetSession(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	page, _, err := db.ListSessions(context.Background(), core.ListQuery{IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range page {
		if x.ID == sid && x.LastStatus != s.LastStatus {
			t.Fatalf("the list says %q, the session %q", x.LastStatus, s.LastStatus)
		}
	}
	return s.LastStatus
}

// TestLastStatusFollowsStatusEntries checks that the session row keeps the
// status of its newest session.status entry: through appends (alone and
// with other entries after it), a restore into another database, and the
// upgrade of a database written before the column existed.
func TestLastStatusFollowsStatusEntries(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/bridge.db"
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, db)
	mustAppend(t, db, s.ID, user("hi"))
	if got := lastStatus(t, db, s.ID); got != "" {
		t.Fatalf("no status entry yet: %q", got)
	}
	mustAppend(t, db, s.ID, assistant("bye"), status("stopped"), user("again"))
	if got := lastStatus(t, db, s.ID); got != "stopped" {
		t.Fatalf("after a stop: %q", got)
	}
	mustAppend(t, db, s.ID, assistant("ok"))
	if got := lastStatus(t, db, s.ID); got != "stopped" {
		t.Fatalf("an entry that is not a status changed it: %q", got)
	}
	mustAppend(t, db, s.ID, status("suspended"))
	if got := lastStatus(t, db, s.ID); got != "suspended" {
		t.Fatalf("after a suspension: %q", got)
	}
	other, err := storage.Open(ctx, t.TempDir()+"/other.db", storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	d, err := db.Dump(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Restore(ctx, d); err != nil {
		t.Fatal(err)
	}
	if got := lastStatus(t, other, s.ID); got != "suspended" {
		t.Fatalf("restored: %q", got)
	}
	// Before migration 9 there was no column: the upgrade reads the
	// newest status entry.
	quiet := newSession(t, db)
	mustAppend(t, db, quiet.ID, user("never stopped"))
	for _, q := range []string{`ALTER TABLE sessions DROP COLUMN last_status`, `DELETE FROM schema_migrations WHERE version = 9`} {
		if _, err := db.SQL().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	db, err = storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := lastStatus(t, db, s.ID); got != "suspended" {
		t.Fatalf("after the upgrade: %q", got)
	}
	if got := lastStatus(t, db, quiet.ID); got != "" {
		t.Fatalf("a session without status entries after the upgrade: %q", got)
	}
}
