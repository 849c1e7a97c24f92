package main

import (
	"context"
	"database/sql"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

// searchCounts returns the entries of the record, those with searchable
// text, and the rows of the search index (plus index rows whose entry is
// missing).
func searchCounts(t *testing.T, q *sql.DB) (entries, searchable, indexed, orphans int) {
	t.Helper()
	rows, err := q.Query(`SELECT kind, payload FROM entries`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var kind, payload string
		if err := rows.Scan(&kind, &payload); err != nil {
			t.Fatal(err)
		}
		entries++
		if storage.SearchText(coreKind(kind), []byte(payload)) != "" {
			searchable++
		}
	}
	rows.Close()
	if err := q.QueryRow(`SELECT count(*) FROM entry_search`).Scan(&indexed); err != nil {
		t.Fatal(err)
	}
	if err := q.QueryRow(`SELECT count(*) FROM entry_search WHERE entry_id NOT IN (SELECT id FROM entries)`).Scan(&orphans); err != nil {
		t.Fatal(err)
	}
	return
}

// TestKillDuringImportIndexInStep: `bridge import` of a large transcript is
// killed with SIGKILL once some of its batches are committed. The reopened
// record is sound and its search index holds exactly one row per entry
// with text, no more; importing again completes the session, with the index
// again in step.
func TestKillDuringImportIndexInStep(t *testing.T) {
	src := filepath.Join(t.TempDir(), "big.jsonl")
	if err := claudeTranscript(src, "00000001-5436-4b34-8ea1-4bd239b73459", 6<<20); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dbPath := filepath.Join(dir, DatabaseFile)
	cmd := exec.Command(binPath, "--data-dir", dir, "import", "--harness", "claude-code", src)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Kill as soon as a batch is committed (the import is then between
	// batches or inside one).
	killed := false
	for !killed {
		select {
		case <-exited:
			t.Fatal("the import finished before any batch was seen; make the transcript larger")
		case <-time.After(5 * time.Millisecond):
		}
		q, err := sql.Open("sqlite3", "file:"+dbPath+"?mode=ro")
		if err != nil {
			continue
		}
		var n int
		err = q.QueryRow(`SELECT count(*) FROM entries`).Scan(&n)
		q.Close()
		if err == nil && n > 0 {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	if err := <-exited; err == nil {
		t.Log("the import completed before the kill landed; the counts below still must agree")
	}
	db, err := storage.Open(context.Background(), dbPath, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	entries, searchable, indexed, orphans := searchCounts(t, db.SQL())
	if entries == 0 || searchable != indexed || orphans != 0 {
		t.Fatalf("after SIGKILL: %d entries, %d with text, %d index rows, %d orphan rows", entries, searchable, indexed, orphans)
	}
	t.Logf("killed with %d entries recorded (%d with text, %d index rows)", entries, searchable, indexed)
	if rep, err := db.Integrity(context.Background()); err != nil || !rep.Clean() {
		t.Fatalf("integrity after SIGKILL: %+v %v", rep, err)
	}
	db.Close()

	if _, stderr, code := runCLI(t, nil, "--data-dir", dir, "import", "--harness", "claude-code", src); code != 0 {
		t.Fatalf("import again: exit %d: %s", code, stderr)
	}
	db, err = storage.Open(context.Background(), dbPath, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	total, searchable2, indexed2, orphans2 := searchCounts(t, db.SQL())
	if want := importedEntries(t, "claude-code", src); total != want || searchable2 != indexed2 || orphans2 != 0 {
		t.Fatalf("after the second import: %d entries (a clean import has %d), %d with text, %d index rows, %d orphans",
			total, want, searchable2, indexed2, orphans2)
	}
}

// coreKind is an entry kind read from the database.
func coreKind(k string) core.Kind { return core.Kind(k) }
