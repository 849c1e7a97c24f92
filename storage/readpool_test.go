package storage

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"

	"github.com/ncruces/go-sqlite3"
)

func openInternal(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "bridge.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func msg(text string) core.NewEntry {
	return core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(map[string]string{"text": text})}
}

// TestReadPoolCannotWrite: statements run by a read (a read transaction or
// a single-statement read) go through connections that SQLite keeps
// read-only, so a write made by mistake on a read path fails and changes
// nothing.
func TestReadPoolCannotWrite(t *testing.T) {
	ctx := context.Background()
	db := openInternal(t)
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/w", Title: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	err = db.read(ctx, func(q *stmtTx) error {
		_, err := q.ExecContext(ctx, `UPDATE sessions SET title = 'changed' WHERE id = ?`, s.ID)
		return err
	})
	if !errors.Is(err, sqlite3.READONLY) {
		t.Fatalf("a write in a read transaction: err = %v, want SQLITE_READONLY", err)
	}
	c, err := db.readers()
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO audit (source, kind, entity, body, time) VALUES ('t', 't', 't', '{}', 0)`,
		`DELETE FROM sessions`,
		`CREATE TABLE sneaky (x)`,
		`PRAGMA user_version = 7`,
	} {
		if _, err := c.pool.ExecContext(ctx, stmt); !errors.Is(err, sqlite3.READONLY) {
			t.Errorf("%s on the read pool: err = %v, want SQLITE_READONLY", stmt, err)
		}
	}
	got, err := db.GetSession(ctx, s.ID)
	if err != nil || got.Title != "kept" {
		t.Fatalf("session after the refused writes: %+v, %v", got, err)
	}
	var mode string
	if err := c.pool.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("the read pool's journal mode: %q, %v (want wal)", mode, err)
	}
}

// TestReadsSeeCommittedWritesAtOnce: every read method answers from the
// read pool, and each sees the write committed just before it; a read
// transaction held open does not stop the writer (WAL) and keeps its own
// snapshot.
func TestReadsSeeCommittedWritesAtOnce(t *testing.T) {
	ctx := context.Background()
	db := openInternal(t)
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		out, err := db.Append(ctx, s.ID, msg(strings.Repeat("x", i)))
		if err != nil {
			t.Fatal(err)
		}
		e := out[0]
		page, _, err := db.History(ctx, s.ID, 0, 10)
		if err != nil || len(page) == 0 || page[len(page)-1].ID != e.ID {
			t.Fatalf("append %d: History's last entry is not the one just committed (%d entries, %v)", i, len(page), err)
		}
		got, err := db.GetSession(ctx, s.ID)
		if err != nil || got.HeadID != e.ID {
			t.Fatalf("append %d: GetSession head %q, want %q (%v)", i, got.HeadID, e.ID, err)
		}
		if _, err := db.GetEntry(ctx, e.ID); err != nil {
			t.Fatalf("append %d: GetEntry: %v", i, err)
		}
		list, _, err := db.ListSessions(ctx, core.ListQuery{})
		if err != nil || len(list) != 1 || list[0].HeadID != e.ID {
			t.Fatalf("append %d: ListSessions: %+v, %v", i, list, err)
		}
		win, err := db.Window(ctx, s.ID)
		if err != nil || win.HeadID != e.ID || win.Entries != int64(i+1) {
			t.Fatalf("append %d: Window: head %q entries %d, %v", i, win.HeadID, win.Entries, err)
		}
	}

	// A read transaction stays open while the writer commits.
	held, release := make(chan int, 1), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.read(ctx, func(q *stmtTx) error {
			var n int
			if err := q.QueryRowContext(ctx, `SELECT count(*) FROM entries WHERE session_id = ?`, s.ID).Scan(&n); err != nil {
				return err
			}
			held <- n
			<-release
			// The same transaction still sees its snapshot.
			return q.QueryRowContext(ctx, `SELECT count(*) FROM entries WHERE session_id = ?`, s.ID).Scan(&n)
		})
	}()
	before := <-held
	if _, err := db.Append(ctx, s.ID, msg("while a reader holds a snapshot")); err != nil {
		t.Fatalf("the writer was stopped by an open read: %v", err)
	}
	page, _, err := db.History(ctx, s.ID, 0, 100)
	if err != nil || len(page) != before+1 {
		t.Fatalf("a new read sees %d entries (%v), want %d", len(page), err, before+1)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestReadPoolOpensOnFirstRead: Open and writes do not open the read pool
// (startup does not pay for it); the first read does; Close closes it and
// later reads fail as unavailable.
func TestReadPoolOpensOnFirstRead(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "bridge.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(ctx, s.ID, msg("hello")); err != nil {
		t.Fatal(err)
	}
	if db.readOpened() {
		t.Fatal("the read pool was opened before any read")
	}
	if _, err := db.GetSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if !db.readOpened() {
		t.Fatal("a read did not go through the read pool")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetSession(ctx, s.ID); core.ErrorCode(err) != core.CodeUnavailable {
		t.Fatalf("a read after Close: %v, want an unavailable error", err)
	}
}
