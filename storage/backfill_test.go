package storage

import (
	"context"
	"encoding/json"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/core/storetest"
)

// seedWindows writes n sessions of random entries (every other one
// branched) and returns their ids, oldest first.
func seedWindows(t *testing.T, db *DB, seed int64, n, appends int) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for k := 0; k < n; k++ {
		r := rand.New(rand.NewSource(seed + int64(k)))
		s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < appends; i++ {
			out, err := db.Append(ctx, s.ID, storetest.RandomEntries(r, 1+r.Intn(6))...)
			if err != nil {
				t.Fatal(err)
			}
			if k%2 == 1 && i == appends/2 && len(out) > 0 {
				if _, err := db.AppendTo(ctx, s.ID, out[0].ID, msg("a branch")); err != nil {
					t.Fatal(err)
				}
			}
		}
		ids = append(ids, s.ID)
	}
	return ids
}

// storedHead is the head a session's summary row describes ("" if none).
func storedHead(t *testing.T, db *DB, sessionID string) string {
	t.Helper()
	var head string
	rows, err := db.sql.Query(`SELECT head_id FROM session_windows WHERE session_id = ?`, sessionID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&head); err != nil {
			t.Fatal(err)
		}
	}
	return head
}

// TestMigrationBuildsMissingWindows: a database from before migration 0005
// (no summary tables) gets every session's summary built while it is
// migrated, before any read, and each is the summary of the session's
// active branch.
func TestMigrationBuildsMissingWindows(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.noIndex.Store(true)
	ids := seedWindows(t, db, 1, 6, 25)
	// Back to a database from before migration 0005.
	for _, q := range []string{`DROP TABLE session_window_items`, `DROP TABLE session_windows`,
		`DELETE FROM schema_migrations WHERE version IN (5, 11)`} {
		if _, err := db.sql.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, id := range ids {
		s, err := db.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := storedHead(t, db, id); got != s.HeadID {
			t.Fatalf("session %s: after the migration, before any Window read, the summary describes %q, want %q", id, got, s.HeadID)
		}
		got, err := db.Window(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		br, err := db.ActiveBranch(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(checkpoint.WindowOf(br))
		if string(g) != string(w) {
			t.Fatalf("session %s: Window after the migration\n got %s\nwant %s", id, g, w)
		}
	}
}

// TestWindowBackfillIsBounded: the backfill reads no more entries than its
// budget: sessions are taken newest first, one that does not fit what is
// left is skipped (and built on its first read), a smaller older one that
// fits is still built; summaries that exist, even for another head, are
// left alone.
func TestWindowBackfillIsBounded(t *testing.T) {
	ctx := context.Background()
	db := openInternal(t)
	db.noIndex.Store(true)
	small := seedWindows(t, db, 1, 1, 5)[0] // oldest
	big := seedWindows(t, db, 2, 1, 60)[0]
	mid := seedWindows(t, db, 3, 1, 20)[0]
	kept := seedWindows(t, db, 4, 1, 5)[0] // newest
	maxSeq := func(id string) int64 {
		var n int64
		if err := db.sql.QueryRowContext(ctx, `SELECT max(seq) FROM entries WHERE session_id = ?`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := db.sql.ExecContext(ctx, `DELETE FROM session_windows WHERE session_id <> ?`, kept); err != nil {
		t.Fatal(err)
	}
	if _, err := db.sql.ExecContext(ctx, `UPDATE session_windows SET head_id = 'elsewhere' WHERE session_id = ?`, kept); err != nil {
		t.Fatal(err)
	}
	// Newest first: mid fits, big does not fit what is left, small does.
	budget := maxSeq(mid) + maxSeq(small) + 1
	if maxSeq(big) <= maxSeq(small)+1 {
		t.Fatalf("the sessions' sizes do not make the case: %d %d %d", maxSeq(small), maxSeq(mid), maxSeq(big))
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := backfillWindowsWithin(ctx, tx, budget); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id    string
		built bool
	}{{small, true}, {mid, true}, {big, false}} {
		s, _ := db.GetSession(ctx, c.id)
		if got := storedHead(t, db, c.id) == s.HeadID; got != c.built {
			t.Errorf("session %s (max seq %d, budget %d): built %v, want %v", c.id, maxSeq(c.id), budget, got, c.built)
		}
	}
	if got := storedHead(t, db, kept); got != "elsewhere" {
		t.Errorf("a summary of another head was changed by the backfill: %q", got)
	}
}
