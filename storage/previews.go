package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// maxAttachmentBytes bounds one stored image.
const maxAttachmentBytes = 32 << 20

// SavePreview implements core.PreviewStore.
func (db *DB) SavePreview(ctx context.Context, p core.Preview) error {
	row, err := record.NewPreview(p, db.now())
	if err != nil {
		return err
	}
	return db.submit(ctx, func(ctx context.Context, w *txWriter) error {
		_, err := w.q.ExecContext(ctx, `INSERT INTO previews (id, source_session_id, target, lang, path, summary, extra, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, p.ID, p.SourceSessionID, row.Target, p.Lang, p.Path, p.Summary, row.Extra, row.CreatedAt)
		if err != nil {
			return fmt.Errorf("storage: save preview %s: %w", p.ID, err)
		}
		return nil
	})
}

// GetPreview implements core.PreviewStore.
func (db *DB) GetPreview(ctx context.Context, id string) (core.Preview, error) {
	var p core.Preview
	var row record.PreviewRow
	var executed *int64
	err := db.sql.QueryRowContext(ctx, `SELECT id, source_session_id, target, lang, path, summary, extra, created_at, executed_at
		FROM previews WHERE id = ?`, id).Scan(&p.ID, &p.SourceSessionID, &row.Target, &p.Lang, &p.Path, &p.Summary, &row.Extra, &row.CreatedAt, &executed)
	if errors.Is(err, sql.ErrNoRows) {
		return core.Preview{}, core.NotFound("preview", id)
	}
	if err != nil {
		return core.Preview{}, fmt.Errorf("storage: get preview %s: %w", id, err)
	}
	if err := record.ReadPreview(&p, row, executed); err != nil {
		return core.Preview{}, err
	}
	return p, nil
}

// ClaimPreview implements core.PreviewStore with one conditional update:
// the row changes only while executed_at is NULL.
func (db *DB) ClaimPreview(ctx context.Context, id string, at time.Time) error {
	return db.submit(ctx, func(ctx context.Context, w *txWriter) error {
		res, err := w.q.ExecContext(ctx, `UPDATE previews SET executed_at = ? WHERE id = ? AND executed_at IS NULL`, record.Nanos(at), id)
		if err != nil {
			return fmt.Errorf("storage: claim preview %s: %w", id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("storage: claim preview %s: %w", id, err)
		}
		if n == 1 {
			return nil
		}
		var exists int
		if err := w.q.QueryRowContext(ctx, `SELECT count(*) FROM previews WHERE id = ?`, id).Scan(&exists); err != nil {
			return fmt.Errorf("storage: claim preview %s: %w", id, err)
		}
		if exists == 0 {
			return core.NotFound("preview", id)
		}
		return core.Errorf(core.CodeConflict, "preview %s was already executed", id)
	})
}

// ReleasePreview implements core.PreviewStore.
func (db *DB) ReleasePreview(ctx context.Context, id string) error {
	return db.submit(ctx, func(ctx context.Context, w *txWriter) error {
		if _, err := w.q.ExecContext(ctx, `UPDATE previews SET executed_at = NULL WHERE id = ?`, id); err != nil {
			return fmt.Errorf("storage: release preview %s: %w", id, err)
		}
		return nil
	})
}

// PutAttachment implements core.AttachmentStore.
func (db *DB) PutAttachment(ctx context.Context, a core.Attachment, data []byte) error {
	if len(a.SHA256) != 64 || a.MediaType == "" {
		return core.Errorf(core.CodeInvalid, "storage: an attachment needs a sha256 and a media type")
	}
	if len(data) > maxAttachmentBytes {
		return core.Errorf(core.CodeInvalid, "storage: an attachment of %d bytes is over the %d-byte limit", len(data), maxAttachmentBytes)
	}
	return db.submit(ctx, func(ctx context.Context, w *txWriter) error {
		_, err := w.q.ExecContext(ctx, `INSERT INTO attachments (sha256, media_type, bytes, data, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (sha256) DO NOTHING`, a.SHA256, a.MediaType, len(data), data, record.Nanos(db.now()))
		if err != nil {
			return fmt.Errorf("storage: put attachment %s: %w", a.SHA256, err)
		}
		return nil
	})
}

// GetAttachment implements core.AttachmentStore.
func (db *DB) GetAttachment(ctx context.Context, sha256 string) (core.Attachment, []byte, error) {
	a := core.Attachment{SHA256: sha256}
	var data []byte
	err := db.sql.QueryRowContext(ctx, `SELECT media_type, bytes, data FROM attachments WHERE sha256 = ?`, sha256).
		Scan(&a.MediaType, &a.Bytes, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return core.Attachment{}, nil, core.NotFound("attachment", sha256)
	}
	if err != nil {
		return core.Attachment{}, nil, fmt.Errorf("storage: get attachment %s: %w", sha256, err)
	}
	return a, data, nil
}
