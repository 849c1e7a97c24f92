package storage_test

import (
	"context"
	"encoding/json"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/core/storetest"
	"github.com/bridge-dev/bridge/storage"
)

// TestWindowFromAnEarlierSchema: a database whose summary rows hold the
// evidence lists inline and that has no items table (migration 5 as it
// first landed) still answers Window right, and keeps it right through
// further appends (the table is created on the first write).
func TestWindowFromAnEarlierSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(3))
	s := newSession(t, db)
	mustAppend(t, db, s.ID, storetest.RandomEntries(r, 80)...)
	br, err := db.ActiveBranch(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := json.Marshal(checkpoint.WindowOf(br))
	for _, q := range []string{`DROP TABLE session_window_items`, `UPDATE session_windows SET state = '` + string(whole) + `'`} {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	db, err = storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check := func(when string) {
		t.Helper()
		got, err := db.Window(ctx, s.ID)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		br, err := db.ActiveBranch(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(checkpoint.WindowOf(br))
		if string(g) != string(w) {
			t.Fatalf("%s: Window\n got %s\nwant %s", when, g, w)
		}
	}
	check("as left by the earlier schema")
	mustAppend(t, db, s.ID, user("a message only"))
	check("after a message")
	for i := 0; i < 10; i++ {
		mustAppend(t, db, s.ID, storetest.RandomEntries(r, 1+r.Intn(5))...)
		check("after more entries")
	}
	var n int
	if err := db.SQL().QueryRowContext(ctx, `SELECT count(*) FROM session_window_items`).Scan(&n); err != nil {
		t.Fatalf("the items table was not created: %v", err)
	}
}

// TestWindowRebuilt: with its summary gone (a database older than the
// summary), Window rebuilds it from the record, on sessions that never
// branched (read by index) and on branched ones (walked), whatever the
// boundaries, model changes and checkpoints on them; later appends keep it.
func TestWindowRebuilt(t *testing.T) {
	ctx := context.Background()
	db := openBench(&testing.B{})
	defer db.Close()
	for seed := int64(1); seed <= 8; seed++ {
		r := rand.New(rand.NewSource(seed))
		s := newSession(t, db)
		for i := 0; i < 40; i++ {
			out := mustAppend(t, db, s.ID, storetest.RandomEntries(r, 1+r.Intn(8))...)
			if seed%2 == 0 && i == 20 && len(out) > 0 {
				if _, err := db.AppendTo(ctx, s.ID, out[0].ID, user("a branch")); err != nil {
					t.Fatal(err)
				}
			}
		}
		for step := 0; step < 3; step++ {
			if _, err := db.SQL().ExecContext(ctx, `DELETE FROM session_windows WHERE session_id = ?`, s.ID); err != nil {
				t.Fatal(err)
			}
			got, err := db.Window(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			br, err := db.ActiveBranch(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(checkpoint.WindowOf(br))
			if string(g) != string(w) {
				t.Fatalf("seed %d step %d: rebuilt Window\n got %s\nwant %s", seed, step, g, w)
			}
			mustAppend(t, db, s.ID, storetest.RandomEntries(r, 3)...)
			got, _ = db.Window(ctx, s.ID)
			br, _ = db.ActiveBranch(ctx, s.ID)
			g, _ = json.Marshal(got)
			w, _ = json.Marshal(checkpoint.WindowOf(br))
			if string(g) != string(w) {
				t.Fatalf("seed %d step %d: Window after an append to the rebuilt summary\n got %s\nwant %s", seed, step, g, w)
			}
		}
	}
}
