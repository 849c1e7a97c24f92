package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

// TestSearchLaterFindsWhatTheRecordHolds: with Options.SearchLater the
// index file is opened after Open returns; a search still finds the entries
// written before the open and those appended right after it, an unreadable
// index file is still replaced, and a close straight after the open leaves
// a complete index behind.
func TestSearchLaterFindsWhatTheRecordHolds(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, db)
	mustAppend(t, db, s.ID, user("a patient heron by the weir"))
	db.Close()

	// Closed at once: the index opens, catches up and closes cleanly.
	db, err = storage.Open(ctx, path, storage.Options{SearchLater: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close right after an open with SearchLater: %v", err)
	}

	db, err = storage.Open(ctx, path, storage.Options{SearchLater: true})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, db, s.ID, user("a second heron, late"))
	if p := search(t, db, core.SearchQuery{Query: "heron"}); len(p.Hits) != 2 {
		t.Fatalf("heron: %d hits, want 2 (one written before the open, one after)", len(p.Hits))
	}
	db.Close()

	if err := os.WriteFile(path+"-search", []byte(strings.Repeat("this is not a database file ", 400)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-search-wal", "-search-shm"} {
		_ = os.Remove(path + suffix)
	}
	db, err = storage.Open(ctx, path, storage.Options{SearchLater: true})
	if err != nil {
		t.Fatalf("open with an unreadable index file: %v", err)
	}
	defer db.Close()
	if p := search(t, db, core.SearchQuery{Query: "heron"}); len(p.Hits) != 2 {
		t.Fatalf("heron: %d hits after the index was replaced, want 2", len(p.Hits))
	}
}

// TestSearchLaterReportsAnIndexThatCannotOpen: when the index file cannot
// be opened (here a folder stands where it should be), Open without
// SearchLater fails, naming the file; with SearchLater the record opens and
// works, and each search fails with the same clear error instead of
// answering from a missing index.
func TestSearchLaterReportsAnIndexThatCannotOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	if err := os.Mkdir(path+"-search", 0o700); err != nil {
		t.Fatal(err)
	}
	if db, err := storage.Open(ctx, path, storage.Options{}); err == nil {
		db.Close()
		t.Fatal("Open succeeded with a folder in place of the search index")
	} else if !strings.Contains(err.Error(), path+"-search") {
		t.Fatalf("Open: %v; want the index file named", err)
	}

	db, err := storage.Open(ctx, path, storage.Options{SearchLater: true})
	if err != nil {
		t.Fatalf("Open with SearchLater: %v; the record itself is fine", err)
	}
	s := newSession(t, db)
	mustAppend(t, db, s.ID, user("an otter in the reeds"))
	if es, _, err := db.History(ctx, s.ID, 0, 10); err != nil || len(es) != 1 {
		t.Fatalf("history: %d entries, %v; want the one appended", len(es), err)
	}
	for i := 0; i < 2; i++ {
		_, err := db.Search(ctx, core.SearchQuery{Query: "otter"})
		if err == nil {
			t.Fatal("Search answered without its index")
		}
		if msg := err.Error(); !strings.Contains(msg, "search index could not be opened") || !strings.Contains(msg, path+"-search") {
			t.Fatalf("Search: %v; want it to say the search index could not be opened, naming the file", err)
		}
	}
	if err := db.CatchUpSearch(ctx); err == nil || !strings.Contains(err.Error(), "search index could not be opened") {
		t.Fatalf("CatchUpSearch: %v; want the same error", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
