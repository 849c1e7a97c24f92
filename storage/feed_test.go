package storage_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/storetest"
	"github.com/bridge-dev/bridge/storage"
)

// openTwo opens one database file twice: two processes on one data
// directory.
func openTwo(t *testing.T) (*storage.DB, *storage.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bridge.db")
	var dbs [2]*storage.DB
	for i := range dbs {
		db, err := storage.Open(context.Background(), path, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	return dbs[0], dbs[1]
}

// TestChangeFeed runs core.ChangeFeed's conformance suite on SQLite: two
// opens of one file stand for two processes on one data directory.
func TestChangeFeed(t *testing.T) {
	storetest.RunChangeFeed(t, func(t *testing.T) (core.Store, core.Store) { return openTwo(t) })
}

// TestChangeFeedSeesAnImport: a bulk import another process commits
// (UpdateBulk, one transaction) reaches the follower whole, and the
// follower's own process's import does not.
func TestChangeFeedSeesAnImport(t *testing.T) {
	ctx := context.Background()
	a, b := openTwo(t)
	got := make(chan []core.Entry, 100)
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.FollowAppends(fctx, func(es []core.Entry) { got <- es }) }()
	defer func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("FollowAppends ended with %v", err)
		}
	}()
	imp := func(db *storage.DB, n int) string {
		var sid string
		err := db.UpdateBulk(ctx, func(w core.Writer) error {
			s, err := w.CreateSession(ctx, core.Session{Harness: "fake"})
			if err != nil {
				return err
			}
			sid = s.ID
			es := make([]core.NewEntry, n)
			for i := range es {
				es[i] = core.NewEntry{Kind: core.KindUserMessage, Payload: []byte(fmt.Sprintf(`{"text":"imported %d"}`, i))}
			}
			_, err = w.Append(ctx, s.ID, es...)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return sid
	}
	// The follower may start after the first import: import until one
	// arrives, then once more from each process.
	for i := 0; ; i++ {
		if i == 600 {
			t.Fatal("the follower never handed an import over")
		}
		imp(a, 3)
		select {
		case <-got:
		case <-time.After(100 * time.Millisecond):
			continue
		}
		break
	}
	own := imp(b, 7)
	sid := imp(a, 1500)
	var heard []core.Entry
	deadline := time.After(time.Minute)
	for len(heard) < 1500 {
		select {
		case es := <-got:
			for _, e := range es {
				if e.SessionID == own {
					t.Fatalf("the follower handed over its own process's import: %s", storetest.Texts(es))
				}
				if e.SessionID == sid {
					heard = append(heard, e)
				}
			}
		case <-deadline:
			t.Fatalf("the follower handed over %d of 1,500 imported entries", len(heard))
		}
	}
	for i, e := range heard {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d handed over is seq %d, want %d: in order, once each", i, e.Seq, i+1)
		}
	}
}

// TestIdleFollowerReadsNothing: while no one commits, the follower's looks
// read no entries (only SQLite's change counter, PRAGMA data_version);
// another process's next commit is read and handed over at once.
func TestIdleFollowerReadsNothing(t *testing.T) {
	ctx := context.Background()
	a, b := openTwo(t)
	s, err := a.CreateSession(ctx, core.Session{Harness: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []core.Entry, 1000)
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.FollowAppends(fctx, func(es []core.Entry) { got <- es }) }()
	defer func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("FollowAppends ended with %v", err)
		}
	}()
	say := func(text string) {
		t.Helper()
		if _, err := a.Append(ctx, s.ID, core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(map[string]string{"text": text})}); err != nil {
			t.Fatal(err)
		}
	}
	// The follower runs once it hands over an entry appended after it
	// started.
	for i := 0; ; i++ {
		if i == 600 {
			t.Fatal("the follower never handed an entry over")
		}
		say("marker")
		select {
		case <-got:
		case <-time.After(100 * time.Millisecond):
			continue
		}
		break
	}
	// waitLooks returns once the follower looked n more times (a hang
	// fails after a minute; no timing is asserted).
	waitLooks := func(n int64) {
		t.Helper()
		want := storage.FeedLooks(b) + n
		deadline := time.Now().Add(time.Minute)
		for storage.FeedLooks(b) < want {
			if time.Now().After(deadline) {
				t.Fatalf("the follower looked %d times in a minute", storage.FeedLooks(b)-want+n)
			}
			time.Sleep(storage.FollowPoll / 4)
		}
	}
	waitLooks(2) // a commit during the last read is read at the next look
	reads := storage.FeedReads(b)
	waitLooks(5)
	if n := storage.FeedReads(b) - reads; n != 0 {
		t.Errorf("an idle follower read the entries table %d times in 5 looks, want 0", n)
	}
	say("after the quiet")
	deadline := time.After(time.Minute)
	for {
		select {
		case es := <-got:
			if len(es) > 0 && strings.Contains(string(es[len(es)-1].Payload), "after the quiet") {
				if storage.FeedReads(b) == reads {
					t.Error("the entry was handed over without a read")
				}
				return
			}
		case <-deadline:
			t.Fatal("the follower did not hand over the commit after the quiet")
		}
	}
}

// TestSessionFeed runs core.SessionFeed's conformance suite on SQLite: two
// opens of one file stand for two processes on one data directory.
func TestSessionFeed(t *testing.T) {
	storetest.RunSessionFeed(t, func(t *testing.T) (core.Store, core.Store) { return openTwo(t) })
}
