package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core/campaign"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage"
)

// TestCrashDuringImport kills the server with SIGKILL at random moments
// while session/import records a large transcript, 10 times on one data
// directory (50 with BRIDGE_CAMPAIGN=nightly). After each kill the record
// is sound; in the end an import of the same file completes it, and a
// second adds nothing.
func TestCrashDuringImport(t *testing.T) {
	t.Parallel()
	const n = 20000
	path := filepath.Join(t.TempDir(), "big.jsonl")
	var b strings.Builder
	for i := 0; i < n; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&b, `{"type":%q,"uuid":"u-%06d","sessionId":"big-session","message":{"role":%q,"content":[{"type":"text","text":"line %d of the big transcript"}]}}`+"\n", role, i, role, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	trials := campaign.Count(10, 50)
	seen := map[bool]int{}
	for trial := 0; trial < trials; trial++ {
		c := startBridge(t, dir)
		c.initialize(nil)
		c.Request("session/import", schema.SessionImportParams{Harness: "claude-code", Path: path})
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-c.Done()
		_ = c.cmd.Wait()
		ctx := context.Background()
		db, err := storage.Open(ctx, filepath.Join(dir, DatabaseFile), storage.Options{})
		if err != nil {
			t.Fatalf("trial %d: reopen after kill: %v", trial, err)
		}
		rep, err := db.Integrity(ctx)
		if err != nil || !rep.Clean() {
			t.Fatalf("trial %d: integrity after kill: %+v, %v", trial, rep, err)
		}
		var entries int
		_ = db.SQL().QueryRowContext(ctx, `SELECT count(*) FROM entries`).Scan(&entries)
		seen[entries > 0 && entries < n]++
		db.Close()
	}
	t.Logf("%d kills left a partly imported session, %d none or all of it", seen[true], seen[false])
	c := startBridge(t, dir)
	c.initialize(nil)
	first := rpctest.Must(c.Client, c.SessionImport, schema.SessionImportParams{Harness: "claude-code", Path: path})
	again := rpctest.Must(c.Client, c.SessionImport, schema.SessionImportParams{Harness: "claude-code", Path: path})
	if again.Entries != 0 || again.SessionID != first.SessionID {
		t.Fatalf("re-import after completing: %+v (first %+v)", again, first)
	}
	list := rpctest.Must(c.Client, c.SessionList, schema.SessionListParams{})
	if len(list.Items) != 1 {
		t.Fatalf("%d sessions after the killed imports, want 1", len(list.Items))
	}
	hist := rpctest.Must(c.Client, c.SessionHistory, schema.SessionHistoryParams{SessionID: first.SessionID, MaxMessages: 1000000})
	if len(hist.Entries) != n {
		t.Fatalf("history holds %d entries after the imports, want %d", len(hist.Entries), n)
	}
	c.exit(true)
}
