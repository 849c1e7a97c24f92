package storage_test

import (
	"context"
	"encoding/json"
	"math/rand"
	"testing"

	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/core/storetest"
)

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
