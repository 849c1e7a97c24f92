package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// TestSessionChangesReachAnotherProcess: two `bridge serve` processes on
// one record (one data directory on SQLite, one database on PostgreSQL).
// When B renames or archives its session, A's client is told
// (session/changed, with the title and archive flag as they are now), and
// so is B's own.
func TestSessionChangesReachAnotherProcess(t *testing.T) {
	eachStore(t, testSessionChangesReachAnotherProcess)
}

func testSessionChangesReachAnotherProcess(t *testing.T, st storeKind) {
	dir := st.dataDir(t, nil)
	a, b := startBridge(t, dir), startBridge(t, dir)
	a.initialize(nil)
	b.initialize(nil)
	sid := createFake(t, b)
	ctx := t.Context()
	heard := func(c *client, keep func(schema.SessionChangedNotification) bool) bool {
		for _, n := range rpctest.Notes(c.Client, schema.NoticeSessionChanged) {
			if n.SessionID == sid && keep(n) {
				return true
			}
		}
		return false
	}
	// A follows from its initialize on; B renames until A hears one.
	for i := 0; ; i++ {
		title := fmt.Sprintf("warming up %d", i)
		_, err := b.SessionRename(ctx, schema.SessionRenameParams{SessionID: sid, Title: title})
		must(t, "session/rename", err)
		rpctest.Await(b.Client, schema.NoticeSessionChanged, func(n schema.SessionChangedNotification) bool {
			return n.SessionID == sid && n.Title == title
		})
		if heard(a, func(schema.SessionChangedNotification) bool { return true }) {
			break
		}
		if i == 300 {
			t.Fatalf("A never heard B's renames in 300 tries; A's stderr:\n%s", a.stderr.String())
		}
		time.Sleep(100 * time.Millisecond) // A's follower may not be looking yet
	}
	_, err := b.SessionRename(ctx, schema.SessionRenameParams{SessionID: sid, Title: "renamed by B"})
	must(t, "session/rename", err)
	rpctest.Await(a.Client, schema.NoticeSessionChanged, func(n schema.SessionChangedNotification) bool {
		return n.SessionID == sid && n.Title == "renamed by B" && !n.Archived
	})
	_, err = b.SessionArchive(ctx, schema.SessionArchiveParams{SessionID: sid})
	must(t, "session/archive", err)
	for _, c := range []*client{a, b} {
		rpctest.Await(c.Client, schema.NoticeSessionChanged, func(n schema.SessionChangedNotification) bool {
			return n.SessionID == sid && n.Title == "renamed by B" && n.Archived
		})
	}
}
