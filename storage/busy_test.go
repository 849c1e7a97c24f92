package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// TestIsBusyByCode: a real "database is locked" from SQLite is recognised
// by its result code, through wrapping; the same words in an error that
// carries no SQLite code are not.
func TestIsBusyByCode(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	dsn := "file:" + path + "?_pragma=busy_timeout(0)"
	a, err := sql.Open("sqlite3", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Exec(`CREATE TABLE t(x)`); err != nil {
		t.Fatal(err)
	}
	holder, err := a.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	defer holder.ExecContext(ctx, `ROLLBACK`)
	b, err := sql.Open("sqlite3", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Exec(`INSERT INTO t VALUES (1)`)
	if err == nil {
		t.Fatal("a write under another connection's exclusive lock succeeded")
	}
	if !isBusy(err) || !isBusy(fmt.Errorf("storage: migrate: %w", err)) {
		t.Fatalf("%v (%T) is not recognised as busy", err, err)
	}
	if isBusy(errors.New(err.Error())) || isBusy(errors.New("database is locked")) {
		t.Fatal("the text alone was taken for SQLite's busy code")
	}
}

// TestBusyAtConnectionSetup: the case the open retry exists for. Turning a
// database to WAL mode while another connection holds it locked fails in
// the driver's connection setup (before busy_timeout applies); that error
// still carries SQLite's code, so the retry recognises it.
func TestBusyAtConnectionSetup(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	a, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	holder, err := a.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, `CREATE TABLE other(x)`); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	defer holder.ExecContext(ctx, `ROLLBACK`)
	b, err := sql.Open("sqlite3", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.PingContext(ctx)
	if err == nil {
		t.Fatal("WAL mode was set under another connection's exclusive lock")
	}
	if !isBusy(err) {
		t.Fatalf("%v (%T) is not recognised as busy", err, err)
	}
}

// TestWritesWaitOutAnotherProcessesLock: while another connection (a
// `bridge import` in another process) holds the write lock for several
// busy timeouts, an Append whose caller still waits is neither failed nor
// dropped: it commits once the lock is released. A caller that gives up
// meanwhile gets a cancellation and nothing of its is written; Close during
// the wait ends the wait with an error instead of hanging.
func TestWritesWaitOutAnotherProcessesLock(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := Open(ctx, path, Options{BusyTimeout: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateSession(ctx, core.Session{Harness: "claude-code", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	entry := func(text string) core.NewEntry {
		return core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(map[string]string{"text": text})}
	}
	other, err := sql.Open("sqlite3", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holder, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	hold := func() {
		t.Helper()
		if _, err := holder.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
			t.Fatal(err)
		}
	}
	// waitForLockWaits waits until the writer has waited out n busy
	// timeouts in all, failing if the write it carries (pending) returns
	// first: before beginWaiting, that write failed after one timeout.
	waitForLockWaits := func(n int64, pending <-chan error) {
		t.Helper()
		for db.lockWaits.Load() < n {
			select {
			case err := <-pending:
				t.Fatalf("the Append returned while another connection held the lock: %v", err)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}

	hold()
	kept := make(chan error, 1)
	go func() {
		_, err := db.Append(ctx, s.ID, entry("kept"))
		kept <- err
	}()
	waitForLockWaits(1, kept)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = db.Append(short, s.ID, entry("given up"))
	cancel()
	if core.ErrorCode(err) != core.CodeCancelled {
		t.Fatalf("an Append whose caller gave up: %v (%s), want a cancellation", err, core.ErrorCode(err))
	}
	before := db.lockWaits.Load()
	waitForLockWaits(before+3, kept) // three more busy timeouts
	if _, err := holder.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if err := <-kept; err != nil {
		t.Fatalf("the waiting Append failed after the lock was released: %v", err)
	}
	branch, err := db.ActiveBranch(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(branch) != 1 || !strings.Contains(string(branch[0].Payload), "kept") {
		t.Fatalf("the record holds %d entries (%v), want only the kept one", len(branch), branch)
	}

	hold()
	defer holder.ExecContext(ctx, `ROLLBACK`)
	closing := make(chan error, 1)
	go func() {
		_, err := db.Append(ctx, s.ID, entry("during close"))
		closing <- err
	}()
	waitForLockWaits(db.lockWaits.Load()+1, closing)
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-closing; core.ErrorCode(err) != core.CodeUnavailable {
		t.Fatalf("an Append waiting when Close began: %v (%s), want unavailable", err, core.ErrorCode(err))
	}
}
