package storage

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded schema step, named NNNN_description.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the embedded migrations in lexical order.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("storage: list migrations: %w", err)
	}
	sort.Strings(names)
	out := make([]migration, 0, len(names))
	for _, n := range names {
		base := strings.TrimPrefix(n, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("storage: migration %s: name must start with a positive number and '_'", base)
		}
		if len(out) > 0 && out[len(out)-1].version >= v {
			return nil, fmt.Errorf("storage: migration %s: version %d is not above %d", base, v, out[len(out)-1].version)
		}
		b, err := migrationFS.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("storage: read migration %s: %w", base, err)
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	return out, nil
}

// goSteps are work a migration needs beyond its SQL, run in the same
// transaction right after it.
// (Migration 2 once indexed the existing entries here; the index has since
// moved to its own file, built from the record by the indexer.)
var goSteps = map[int]func(ctx context.Context, tx *sql.Tx) error{
	6:  backfillLinks,
	11: backfillWindows,
}

// KnownSchemaVersion is the highest schema version this Bridge can apply.
func KnownSchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrate applies the pending migrations, each in its own write transaction
// recorded in schema_migrations. Another process migrating at the same time
// is harmless: each step re-checks under the write lock.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	if _, err := db.sql.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("storage: create schema_migrations: %w", err)
	}
	applied, err := db.appliedVersions(ctx)
	if err != nil {
		return err
	}
	current := 0
	for v := range applied {
		current = max(current, v)
	}
	known := 0
	if len(ms) > 0 {
		known = ms[len(ms)-1].version
	}
	if current > known {
		return core.Errorf(core.CodeUnsupported,
			"storage: %s has schema version %d but this Bridge knows only up to %d; it was written by a newer Bridge, upgrade Bridge to open it",
			db.path, current, known)
	}
	// Every migration not yet recorded runs, in order, even one numbered
	// below the highest applied (numbers may land out of order; each
	// migration stands on its own).
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if err := db.apply(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// appliedVersions returns the versions recorded in schema_migrations.
func (db *DB) appliedVersions(ctx context.Context) (map[int]bool, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("storage: schema versions: %w", err)
	}
	defer rows.Close()
	out := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("storage: schema versions: %w", err)
		}
		out[v] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: schema versions: %w", err)
	}
	return out, nil
}

func (db *DB) apply(ctx context.Context, m migration) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("storage: migration %s: begin: %w", m.name, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	var done int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&done); err != nil {
		return fmt.Errorf("storage: migration %s: %w", m.name, err)
	}
	if done > 0 {
		return nil // another process applied it first
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("storage: migration %s: %w", m.name, err)
	}
	if step := goSteps[m.version]; step != nil {
		if err := step(ctx, tx); err != nil {
			return fmt.Errorf("storage: migration %s: %w", m.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, db.now().UnixNano()); err != nil {
		return fmt.Errorf("storage: migration %s: record: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("storage: migration %s: commit: %w", m.name, err)
	}
	return nil
}

// SchemaVersion returns the highest applied migration version (0 for an
// empty database).
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	if err := db.sql.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("storage: schema version: %w", err)
	}
	return int(v.Int64), nil
}
