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
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// TestKillDuringImportIndexInStep: `bridge import` of a large transcript is
// killed with SIGKILL once some of its batches are committed. The record
// left behind is sound and its search index (a file of its own, following
// the record) holds exactly the entries with text it says it covers, no
// more; once reopened, the index catches up with the whole record; importing
// again completes the session, with the index again complete.
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
	before := storagetest.ReadIndexCounts(t, dbPath)
	if before.Entries == 0 || !before.InStep() {
		t.Fatalf("after SIGKILL: %+v", before)
	}
	t.Logf("killed with %d entries recorded (%d with text, the index covering %d)", before.Entries, before.Searchable, before.Covered)
	db, err := storage.Open(context.Background(), dbPath, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := db.Integrity(context.Background()); err != nil || !rep.Clean() {
		t.Fatalf("integrity after SIGKILL: %+v %v", rep, err)
	}
	if err := db.CatchUpSearch(context.Background()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if c := storagetest.ReadIndexCounts(t, dbPath); !c.Complete() || c.Entries != before.Entries {
		t.Fatalf("after catching up: %+v", c)
	}

	if _, stderr, code := runCLI(t, nil, "--data-dir", dir, "import", "--harness", "claude-code", src); code != 0 {
		t.Fatalf("import again: exit %d: %s", code, stderr)
	}
	if c := storagetest.ReadIndexCounts(t, dbPath); !c.Complete() || c.Entries != importedEntries(t, "claude-code", src) {
		t.Fatalf("after the second import (a clean import has %d entries): %+v", importedEntries(t, "claude-code", src), c)
	}
}

// coreKind is an entry kind read from the database.
func coreKind(k string) core.Kind { return core.Kind(k) }
