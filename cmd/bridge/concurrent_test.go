package main

import (
	"context"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// TestTwoProcessesOneDataDir: two bridge processes (two editor windows) on
// the same data directory append concurrently without errors and without
// losing entries. On both stores (on PostgreSQL one database).
func TestTwoProcessesOneDataDir(t *testing.T) { eachStore(t, testTwoProcessesOneDataDir) }

func testTwoProcessesOneDataDir(t *testing.T, st storeKind) {
	const perTurn = 400
	// Only the turns' own entries are counted: no shutdown checkpoint.
	dir := st.dataDir(t, map[string]any{"checkpointOnShutdown": false})
	a, b := startBridge(t, dir), startBridge(t, dir)
	a.initialize(nil)
	b.initialize(nil)
	sa, sb := createFake(t, a), createFake(t, b)
	var wg sync.WaitGroup
	for _, x := range []struct {
		c   *client
		sid string
	}{{a, sa}, {b, sb}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 3; i++ {
				rpctest.Must(x.c.Client, x.c.SessionPrompt, schema.SessionPromptParams{SessionID: x.sid, Content: prompt("stream 400")})
			}
		}()
	}
	wg.Wait()
	a.exit(true)
	b.exit(true)
	ctx := context.Background()
	db := openRecord(t, dir)
	for _, sid := range []string{sa, sb} {
		br, err := db.ActiveBranch(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		var users, assistants int
		for _, e := range br {
			switch e.Kind {
			case core.KindUserMessage:
				users++
			case core.KindAssistantMessage:
				assistants++
			}
		}
		if users != 3 || assistants != 3*perTurn {
			t.Fatalf("session %s: %d user and %d assistant entries, want 3 and %d", sid, users, assistants, 3*perTurn)
		}
	}
	rep, err := db.Integrity(ctx)
	if err != nil || !rep.Clean() {
		t.Fatalf("integrity %+v %v", rep, err)
	}
}
