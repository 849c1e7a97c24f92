package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

var _ core.DiscoveryLog = (*DB)(nil)

// DiscoveredFile implements core.DiscoveryLog.
func (db *DB) DiscoveredFile(ctx context.Context, harness, path string) (core.DiscoveredFile, bool, error) {
	f := core.DiscoveredFile{Harness: harness, Path: path}
	var mtime int64
	err := db.sql.QueryRowContext(ctx, `SELECT size, mtime, session_id FROM discovered_files WHERE harness = ? AND path = ?`,
		harness, path).Scan(&f.Size, &mtime, &f.SessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return f, false, nil
	}
	if err != nil {
		return f, false, fmt.Errorf("storage: discovered file %s: %w", path, err)
	}
	f.ModTime = record.Unix(mtime)
	return f, true, nil
}

// RecordDiscovered implements core.DiscoveryLog.
func (db *DB) RecordDiscovered(ctx context.Context, f core.DiscoveredFile) error {
	return db.submit(ctx, func(ctx context.Context, w *txWriter) error {
		_, err := w.q.ExecContext(ctx, `INSERT INTO discovered_files (harness, path, size, mtime, session_id, seen_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (harness, path) DO UPDATE SET size = excluded.size, mtime = excluded.mtime,
			session_id = excluded.session_id, seen_at = excluded.seen_at`,
			f.Harness, f.Path, f.Size, record.Nanos(f.ModTime), f.SessionID, record.Nanos(db.now()))
		if err != nil {
			return fmt.Errorf("storage: record discovered %s: %w", f.Path, err)
		}
		return nil
	})
}
