package storage_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

// TestWALBoundAfterBulk: the record's connections cut the write-ahead log
// back to JournalSizeLimit (PRAGMA journal_size_limit), and AfterBulk, run
// after a bulk write that grew the log far past it, truncates the log to
// nothing with every entry kept.
func TestWALBoundAfterBulk(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var limit int64
	if err := db.SQL().QueryRowContext(ctx, `PRAGMA journal_size_limit`).Scan(&limit); err != nil {
		t.Fatal(err)
	}
	if limit != storage.JournalSizeLimit {
		t.Errorf("journal_size_limit = %d, want %d", limit, storage.JournalSizeLimit)
	}
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("bulk import text ", 200)
	const n = 30000
	err = db.Update(ctx, func(w core.Writer) error {
		batch := make([]core.NewEntry, 0, 1000)
		for i := 0; i < n; i++ {
			batch = append(batch, core.NewEntry{Kind: core.KindUserMessage, NativeID: fmt.Sprint("n", i),
				Payload: core.Payload(map[string]any{"text": fmt.Sprint(i, text)})})
			if len(batch) == cap(batch) {
				if _, err := w.Append(ctx, s.ID, batch...); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wal := func() int64 {
		st, err := os.Stat(path + "-wal")
		if err != nil {
			return 0
		}
		return st.Size()
	}
	if w := wal(); w <= storage.JournalSizeLimit {
		t.Fatalf("the bulk write left a log of %d bytes: not past the limit, nothing to show", w)
	}
	if err := db.AfterBulk(ctx); err != nil {
		t.Fatal(err)
	}
	if w := wal(); w != 0 {
		t.Errorf("after AfterBulk the log is %d bytes, want 0", w)
	}
	var count int
	if err := db.SQL().QueryRowContext(ctx, `SELECT count(*) FROM entries WHERE session_id = ?`, s.ID).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Errorf("%d entries after the checkpoint, want %d", count, n)
	}
}
