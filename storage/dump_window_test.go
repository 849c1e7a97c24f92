package storage_test

import (
	"context"
	"encoding/json"
	"math/rand"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/core/storetest"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// storedWindowHead is the head the session's stored window summary
// describes, read straight from the table ("" when there is none).
func storedWindowHead(t *testing.T, db *storage.DB, sessionID string) string {
	t.Helper()
	var head string
	rows, err := db.SQL().QueryContext(context.Background(), `SELECT head_id FROM session_windows WHERE session_id = ?`, sessionID)
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

// checkWindow: the session's Window (answered from the stored summary, which
// describes the head) is the summary of its active branch.
func checkWindow(t *testing.T, db *storage.DB, sessionID, what string) {
	t.Helper()
	ctx := context.Background()
	got, err := db.Window(ctx, sessionID)
	if err != nil {
		t.Fatal(err)
	}
	br, err := db.ActiveBranch(ctx, sessionID)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(checkpoint.WindowOf(br))
	if string(g) != string(w) {
		t.Fatalf("%s: Window\n got %s\nwant %s", what, g, w)
	}
}

// TestRestoreWritesTheWindow: a restore writes the restored session's window
// summary in its own transaction, so that it exists, describing the head,
// before anything reads the session (the first read no longer rebuilds it),
// and it is the summary of the active branch: on sessions that never
// branched (folded while the entries are written) and on branched ones
// (rebuilt at the end of the restore), with boundaries, model changes and
// checkpoints; and when a second restore adds entries to a session already
// there, it still describes the session's own (unchanged) head.
func TestRestoreWritesTheWindow(t *testing.T) {
	ctx := context.Background()
	src := storagetest.Open(t)
	storage.DisableSearchIndex(src)
	for seed := int64(1); seed <= 8; seed++ {
		r := rand.New(rand.NewSource(seed))
		s := newSession(t, src)
		grow := func(n int) {
			for i := 0; i < n; i++ {
				out := mustAppend(t, src, s.ID, storetest.RandomEntries(r, 1+r.Intn(8))...)
				if seed%2 == 0 && i == n/2 && len(out) > 0 {
					if _, err := src.AppendTo(ctx, s.ID, out[0].ID, user("a branch")); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		grow(30)
		d, err := src.Dump(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		dst := storagetest.Open(t)
		storage.DisableSearchIndex(dst)
		if _, err := dst.Restore(ctx, d); err != nil {
			t.Fatal(err)
		}
		if got := storedWindowHead(t, dst, s.ID); got != d.Session.HeadID {
			t.Fatalf("seed %d: after the restore, before any read, the stored summary describes %q, want the head %q", seed, got, d.Session.HeadID)
		}
		checkWindow(t, dst, s.ID, "restored")

		// The source session grows; restoring it again adds the new entries
		// but leaves the session's head (a session already present only
		// gains entries), so the summary still describes the old head.
		oldHead := d.Session.HeadID
		grow(10)
		d, err = src.Dump(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := dst.Restore(ctx, d); err != nil || n == 0 {
			t.Fatalf("seed %d: second restore: %d, %v", seed, n, err)
		}
		if got := storedWindowHead(t, dst, s.ID); got != oldHead {
			t.Fatalf("seed %d: after the second restore the stored summary describes %q, want the unchanged head %q", seed, got, oldHead)
		}
		checkWindow(t, dst, s.ID, "extended")
	}
}

// TestRestoreOfAnEmptySessionWritesNoWindow: a session without entries has
// no head and no summary.
func TestRestoreOfAnEmptySessionWritesNoWindow(t *testing.T) {
	ctx := context.Background()
	dst := storagetest.Open(t)
	if _, err := dst.Restore(ctx, core.SessionDump{Session: core.Session{ID: "s_empty", Harness: "fake", Cwd: "/w"}}); err != nil {
		t.Fatal(err)
	}
	if got := storedWindowHead(t, dst, "s_empty"); got != "" {
		t.Fatalf("summary of an empty session: %q", got)
	}
}
