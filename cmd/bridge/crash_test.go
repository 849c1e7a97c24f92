package main

import (
	"context"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core/campaign"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage"
)

// TestCrashWhileStreaming kills the server with SIGKILL at random moments
// while the fake harness streams entries, 50 times on one data directory
// (200 with BRIDGE_CAMPAIGN=nightly).
// After each kill the record must be sound and hold every entry that a
// session/update announced.
func TestCrashWhileStreaming(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	announcedTotal := 0
	trials := campaign.Count(50, 200)
	for trial := 0; trial < trials; trial++ {
		c := startBridge(t, dir)
		c.initialize(nil)
		sid := createFake(t, c)
		c.Request("session/prompt", schema.SessionPromptParams{SessionID: sid, Content: prompt("stream 5000")})
		// Wait for the stream to start, then kill at a random moment.
		rpctest.Await(c.Client, schema.NoticeSessionUpdate, nil)
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-c.Done()
		_ = c.cmd.Wait()

		announced := map[string]bool{}
		for _, u := range rpctest.Notes(c.Client, schema.NoticeSessionUpdate) {
			announced[u.Entry.ID] = true
		}
		announcedTotal += len(announced)

		ctx := context.Background()
		db, err := storage.Open(ctx, dir+"/"+DatabaseFile, storage.Options{})
		if err != nil {
			t.Fatalf("trial %d: reopen after kill: %v", trial, err)
		}
		rep, err := db.Integrity(ctx)
		if err != nil || !rep.Clean() {
			t.Fatalf("trial %d: integrity after kill: %+v, %v", trial, rep, err)
		}
		for id := range announced {
			if _, err := db.GetEntry(ctx, id); err != nil {
				t.Fatalf("trial %d: entry %s was announced in session/update but is not in the record: %v", trial, id, err)
			}
		}
		db.Close()
	}
	if announcedTotal < trials {
		t.Fatalf("only %d entries announced over %d trials: the kills came too early to test anything", announcedTotal, trials)
	}
	// The data directory still serves after the last kill.
	c := startBridge(t, dir)
	c.initialize(nil)
	list := rpctest.Must(c.Client, c.SessionList, schema.SessionListParams{})
	if len(list.Items) != trials {
		t.Fatalf("after %d killed runs, %d sessions listed, want %d", trials, len(list.Items), trials)
	}
	c.exit(true)
}
