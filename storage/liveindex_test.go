package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// openCountingInserts opens a record whose search indexer signals on
// reached once it has written want index rows (counted from the call).
func openCountingInserts(t *testing.T) (db *storage.DB, path string, expect func(want int64) <-chan struct{}) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "bridge.db")
	var n, target atomic.Int64
	var reached atomic.Pointer[chan struct{}]
	db, err := storage.Open(context.Background(), path, storage.Options{IndexHook: func(point string) {
		if point != "index.insert" {
			return
		}
		if n.Add(1) == target.Load() {
			if ch := reached.Load(); ch != nil {
				close(*ch)
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	expect = func(want int64) <-chan struct{} {
		ch := make(chan struct{})
		reached.Store(&ch)
		target.Store(n.Load() + want)
		return ch
	}
	return db, path, expect
}

func taggedEntries(word string, from, n int) []core.NewEntry {
	es := make([]core.NewEntry, 0, n)
	for i := from; i < from+n; i++ {
		es = append(es, core.NewEntry{Kind: core.KindAssistantMessage, NativeID: word + strconv.Itoa(i),
			Payload: core.Payload(map[string]string{"text": fmt.Sprintf("%s line %s%d", word, word, i)})})
	}
	return es
}

// waitIndexed waits until the indexer has written the rows expected, or
// fails the test after a minute (the rows are written on another
// goroutine while the bulk write goes on).
func waitIndexed(t *testing.T, reached <-chan struct{}) {
	t.Helper()
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("the entries of the bulk write were not indexed while it ran")
	}
}

// TestUpdateBulkIndexesWhileItRuns: the entries a bulk write (an import)
// appends are indexed while it runs, yet no search sees them before the
// record commits; once UpdateBulk returns, the index covers them without
// any catch-up, and a search finds them.
func TestUpdateBulkIndexesWhileItRuns(t *testing.T) {
	ctx := context.Background()
	db, path, expect := openCountingInserts(t)
	s := newSession(t, db)
	mustAppend(t, db, s.ID, taggedEntries("heron", 0, 10)...)
	if err := db.CatchUpSearch(ctx); err != nil {
		t.Fatal(err)
	}
	reached := expect(300)
	err := db.UpdateBulk(ctx, func(w core.Writer) error {
		for b := 0; b < 3; b++ {
			if _, err := w.Append(ctx, s.ID, taggedEntries("okapi", b*100, 100)...); err != nil {
				return err
			}
		}
		waitIndexed(t, reached)
		// Indexed, not committed: neither the index file nor a search
		// shows them (and the search does not wait for the import).
		if c := storagetest.ReadIndexCounts(t, path); c.Rows != 10 || c.Entries != 10 || !c.Complete() {
			t.Errorf("during the bulk write: %+v; want the 10 entries before it, complete", c)
		}
		if p := search(t, db, core.SearchQuery{Query: "okapi"}); len(p.Hits) != 0 {
			t.Errorf("a search during the bulk write found %d of its entries", len(p.Hits))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := storagetest.ReadIndexCounts(t, path); !c.Complete() || c.Entries != 310 || c.Rows != 310 {
		t.Fatalf("right after the bulk write: %+v; want the index complete over 310 entries", c)
	}
	if p := search(t, db, core.SearchQuery{Query: "okapi", Limit: 200}); len(p.Hits) != 200 {
		t.Fatalf("search after the bulk write: %d hits, want 200 (a full page)", len(p.Hits))
	}
	if p := search(t, db, core.SearchQuery{Query: "okapi299"}); len(p.Hits) != 1 {
		t.Fatalf("okapi299 (the last entry imported): %d hits, want 1", len(p.Hits))
	}
}

// TestUpdateBulkRolledBackLeavesNoIndexRows: a bulk write that fails after
// its entries were indexed leaves neither entries nor index rows; the next
// one (whose entries get the same rowids) is indexed correctly.
func TestUpdateBulkRolledBackLeavesNoIndexRows(t *testing.T) {
	ctx := context.Background()
	db, path, expect := openCountingInserts(t)
	s := newSession(t, db)
	mustAppend(t, db, s.ID, taggedEntries("heron", 0, 10)...)
	if err := db.CatchUpSearch(ctx); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("the transcript turned out unreadable")
	reached := expect(250)
	err := db.UpdateBulk(ctx, func(w core.Writer) error {
		for b := 0; b < 5; b++ {
			if _, err := w.Append(ctx, s.ID, taggedEntries("okapi", b*50, 50)...); err != nil {
				return err
			}
		}
		waitIndexed(t, reached)
		return stop
	})
	if !errors.Is(err, stop) {
		t.Fatalf("UpdateBulk: %v, want its function's error", err)
	}
	if c := storagetest.ReadIndexCounts(t, path); !c.Complete() || c.Entries != 10 || c.Rows != 10 {
		t.Fatalf("after the rolled-back bulk write: %+v; want the 10 entries before it and their 10 index rows", c)
	}
	if p := search(t, db, core.SearchQuery{Query: "okapi"}); len(p.Hits) != 0 {
		t.Fatalf("search finds %d entries of the rolled-back bulk write", len(p.Hits))
	}
	err = db.UpdateBulk(ctx, func(w core.Writer) error {
		_, err := w.Append(ctx, s.ID, taggedEntries("zebu", 0, 120)...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := storagetest.ReadIndexCounts(t, path); !c.Complete() || c.Entries != 130 || c.Rows != 130 {
		t.Fatalf("after the next bulk write: %+v; want the index complete over 130 entries", c)
	}
	if p := search(t, db, core.SearchQuery{Query: "zebu", Limit: 200}); len(p.Hits) != 120 {
		t.Fatalf("search zebu: %d hits, want 120", len(p.Hits))
	}
	if p := search(t, db, core.SearchQuery{Query: "okapi"}); len(p.Hits) != 0 {
		t.Fatalf("search okapi: %d hits, want 0", len(p.Hits))
	}
}

// TestKillDuringBulkImportKeepsIndexInStep is TestKillDuringImportKeepsIndexInStep
// for bulk writes (each batch of 50 its own UpdateBulk, indexed while it
// runs): killed inside the record's transaction, inside the live index
// transaction, or between the record's commit and the index's, the files
// left behind hold whole batches in the record and an index exactly in
// step with its mark, never ahead of the record; reopened, search covers
// everything.
func TestKillDuringBulkImportKeepsIndexInStep(t *testing.T) {
	cases := []struct {
		name, env string
		at        int
		entries   int // entries left in the record (-1: 50*k, whatever k)
		covered   int // entries the index covers (-1: any)
	}{
		{"record-1", "BRIDGE_KILL_AT", 1, 0, 0},
		{"record-51", "BRIDGE_KILL_AT", 51, 50, -1},
		{"record-377", "BRIDGE_KILL_AT", 377, 350, -1},
		{"record-commit-1", "BRIDGE_KILL_COMMIT_AT", 1, 0, 0},
		{"record-commit-5", "BRIDGE_KILL_COMMIT_AT", 5, 200, 200},
		{"index-1", "BRIDGE_KILL_INDEX_AT", 1, -1, 0},
		{"index-75", "BRIDGE_KILL_INDEX_AT", 75, -1, 50},
		{"index-1200", "BRIDGE_KILL_INDEX_AT", 1200, -1, 1150},
		// The record has committed the batch, the index not yet.
		{"index-commit-1", "BRIDGE_KILL_INDEX_COMMIT_AT", 1, 50, 0},
		{"index-commit-4", "BRIDGE_KILL_INDEX_COMMIT_AT", 4, 200, 150},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := killedImport(t, true, c.env, c.at)
			before := storagetest.ReadIndexCounts(t, path)
			if before.Entries%50 != 0 || !before.InStep() || before.Covered > before.Entries {
				t.Fatalf("after the kill: %+v; want whole batches of 50 in the record and the index in step with its mark", before)
			}
			if c.entries >= 0 && before.Entries != c.entries {
				t.Fatalf("after the kill: %d entries in the record, want %d", before.Entries, c.entries)
			}
			if c.covered >= 0 && before.Covered != c.covered {
				t.Fatalf("after the kill: the index covers %d entries, want %d (%+v)", before.Covered, c.covered, before)
			}
			t.Logf("left behind: %d entries, index covers %d", before.Entries, before.Covered)
			searchCatchesUp(t, path, before.Entries)
		})
	}
}

// recordRows reads what the record holds of a session, with parents as
// seqs (entry ids differ between databases): one line per entry, then the
// session's head, branched flag and last status.
func recordRows(t *testing.T, db *storage.DB, sid string) []string {
	t.Helper()
	rows, err := db.SQL().Query(`SELECT e.seq, e.kind, e.payload, coalesce(e.native_id, '-'), e.token_estimate,
		coalesce((SELECT p.seq FROM entries p WHERE p.id = e.parent_id), 0)
		FROM entries e WHERE e.session_id = ? ORDER BY e.seq`, sid)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var seq, tokens, parent int64
		var kind, payload, native string
		if err := rows.Scan(&seq, &kind, &payload, &native, &tokens, &parent); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d<-%d %s %s %s %d", seq, parent, kind, native, payload, tokens))
	}
	var head int64
	var branched bool
	var status string
	if err := db.SQL().QueryRow(`SELECT coalesce((SELECT seq FROM entries WHERE id = s.head_id), 0), s.branched,
		coalesce(s.last_status, '') FROM sessions s WHERE s.id = ?`, sid).Scan(&head, &branched, &status); err != nil {
		t.Fatal(err)
	}
	return append(out, fmt.Sprintf("head %d branched %v status %q", head, branched, status))
}

// TestUpdateBulkWritesWhatUpdateWrites: the same appends give the same
// record through UpdateBulk (whose ordinary appends take the fast insert
// path, with foreign-key checks off) as through Update: seqs, parents,
// skipped native ids (already recorded, or twice in one batch), explicit
// parents and branches, the session's head and status. Afterwards every
// connection of the pool checks foreign keys again.
func TestUpdateBulkWritesWhatUpdateWrites(t *testing.T) {
	ctx := context.Background()
	write := func(bulk bool) []string {
		db := storagetest.Open(t)
		s := newSession(t, db)
		mustAppend(t, db, s.ID, taggedEntries("heron", 0, 5)...)
		update := db.Update
		if bulk {
			update = db.UpdateBulk
		}
		status := core.NewEntry{Kind: core.KindSessionStatus, NativeID: "st1",
			Payload: core.Payload(map[string]any{"status": "idle"})}
		err := update(ctx, func(w core.Writer) error {
			b1 := append(taggedEntries("okapi", 0, 4), taggedEntries("heron", 3, 1)...) // heron3: recorded already
			b1 = append(b1, taggedEntries("okapi", 2, 1)...)                            // twice in the batch
			b1 = append(b1, core.NewEntry{Kind: core.KindUserMessage, TokenEstimate: 7,
				Payload: core.Payload(map[string]string{"text": "no native id"})})
			if _, err := w.Append(ctx, s.ID, b1...); err != nil {
				return err
			}
			if _, err := w.Append(ctx, s.ID, append(taggedEntries("okapi", 10, 3), status)...); err != nil {
				return err
			}
			if _, err := w.Append(ctx, s.ID, taggedEntries("okapi", 0, 3)...); err != nil { // all skipped
				return err
			}
			// A branch under the third entry, then appends on the branch.
			var parent string
			if err := db.SQL().QueryRowContext(ctx, `SELECT id FROM entries WHERE session_id = ? AND seq = 3`, s.ID).Scan(&parent); err != nil {
				return err
			}
			if _, err := w.AppendTo(ctx, s.ID, parent, taggedEntries("zebu", 0, 2)...); err != nil {
				return err
			}
			_, err := w.Append(ctx, s.ID, taggedEntries("zebu", 2, 3)...)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		rows := recordRows(t, db, s.ID)
		// Every connection of the pool (up to its 8) checks foreign keys.
		var conns []*sql.Conn
		for i := 0; i < 8; i++ {
			c, err := db.SQL().Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			var on bool
			if err := c.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&on); err != nil || !on {
				t.Fatalf("connection %d of the pool after UpdateBulk: foreign_keys %v (%v)", i, on, err)
			}
		}
		for _, c := range conns {
			c.Close()
		}
		var bad int
		if err := db.SQL().QueryRow(`SELECT count(*) FROM pragma_foreign_key_check`).Scan(&bad); err != nil || bad != 0 {
			t.Fatalf("foreign key check: %d rows (%v)", bad, err)
		}
		return rows
	}
	plain, bulk := write(false), write(true)
	if strings.Join(plain, "\n") != strings.Join(bulk, "\n") {
		t.Fatalf("UpdateBulk wrote\n%s\n\nUpdate wrote\n%s", strings.Join(bulk, "\n"), strings.Join(plain, "\n"))
	}
	if len(plain) != 5+4+1+3+1+2+3+1 {
		t.Fatalf("record: %d lines, want 20:\n%s", len(plain), strings.Join(plain, "\n"))
	}
	t.Logf("record:\n%s", strings.Join(plain, "\n"))
}
