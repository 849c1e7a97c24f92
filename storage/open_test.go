package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

func TestOpenPermissions(t *testing.T) {
	// A permissive umask must not leak into the record's permissions.
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "data", "bridge")
	path := filepath.Join(dir, "bridge.db")
	ctx := context.Background()
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := newSession(t, db)
	mustAppend(t, db, s.ID, user("hello"))

	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("folder mode = %v, %v; want 0700", st.Mode().Perm(), err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if os.IsNotExist(err) && p != path+"-wal" {
			t.Logf("%s does not exist (fine)", filepath.Base(p))
			continue
		}
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", filepath.Base(p), st.Mode().Perm())
		}
	}
	var mode string
	if err := db.SQL().QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
	var fk int
	if err := db.SQL().QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Fatalf("foreign_keys = %d, %v", fk, err)
	}
}

func TestMigrationsIdempotentOnReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	var sid string
	for i := 0; i < 3; i++ {
		db, err := storage.Open(ctx, path, storage.Options{})
		if err != nil {
			t.Fatalf("open #%d: %v", i+1, err)
		}
		v, err := db.SchemaVersion(ctx)
		if err != nil || v != storage.KnownSchemaVersion() || v < 1 {
			t.Fatalf("open #%d: SchemaVersion = %d, %v; want %d", i+1, v, err, storage.KnownSchemaVersion())
		}
		var rows int
		if err := db.SQL().QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&rows); err != nil || rows != storage.MigrationCount() {
			t.Fatalf("open #%d: schema_migrations has %d rows, want %d (%v)", i+1, rows, storage.MigrationCount(), err)
		}
		if i == 0 {
			sid = newSession(t, db).ID
			mustAppend(t, db, sid, user("kept"))
		} else if br, err := db.ActiveBranch(ctx, sid); err != nil || len(br) != 1 {
			t.Fatalf("open #%d: data lost: %d %v", i+1, len(br), err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenNewerSchemaFails(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	newer := storage.KnownSchemaVersion() + 1
	if _, err := db.SQL().ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future.sql', 0)`, newer); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = storage.Open(ctx, path, storage.Options{})
	wantCode(t, err, core.CodeUnsupported)
	t.Log(err)
}

func TestClosedDB(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(t.TempDir(), "x", "bridge.db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err = db.Append(ctx, s.ID, user("late"))
	wantCode(t, err, core.CodeUnavailable)
	wantCode(t, db.Update(ctx, func(core.Writer) error { return nil }), core.CodeUnavailable)
}
