package postgres

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// maxAttachmentBytes bounds one attachment (storage's limit).
const maxAttachmentBytes = 32 << 20

// SavePreview implements core.PreviewStore.
func (db *DB) SavePreview(ctx context.Context, p core.Preview) error {
	row, err := record.NewPreview(p, db.now())
	if err != nil {
		return err
	}
	_, err = db.pool.Exec(ctx, `INSERT INTO previews (id, source_session_id, target, lang, path, summary, extra, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, txt(p.ID), txt(p.SourceSessionID), row.Target, txt(p.Lang), txt(p.Path),
		txt(p.Summary), txt(row.Extra), row.CreatedAt)
	if pgCode(err) == "23505" {
		return core.Errorf(core.CodeConflict, "preview %s already exists", p.ID)
	}
	if err != nil {
		return db.errf(err, "save preview %s", p.ID)
	}
	return nil
}

// GetPreview implements core.PreviewStore.
func (db *DB) GetPreview(ctx context.Context, id string) (core.Preview, error) {
	var p core.Preview
	var row record.PreviewRow
	var executed *int64
	err := db.pool.QueryRow(ctx, `SELECT id, source_session_id, target, lang, path, summary, extra, created_at, executed_at
		FROM previews WHERE id = $1`, txt(id)).Scan(&p.ID, &p.SourceSessionID, &row.Target, &p.Lang, &p.Path, &p.Summary, &row.Extra, &row.CreatedAt, &executed)
	if errors.Is(err, pgx.ErrNoRows) {
		return core.Preview{}, core.NotFound("preview", id)
	}
	if err != nil {
		return core.Preview{}, db.errf(err, "get preview %s", id)
	}
	if err := record.ReadPreview(&p, row, executed); err != nil {
		return core.Preview{}, err
	}
	return p, nil
}

// ClaimPreview implements core.PreviewStore: one conditional UPDATE. Of
// concurrent claims, the first to lock the row sets executed_at; the
// others wait for its commit, find executed_at set and match no row.
func (db *DB) ClaimPreview(ctx context.Context, id string, at time.Time) error {
	id = txt(id)
	tag, err := db.pool.Exec(ctx, `UPDATE previews SET executed_at = $1 WHERE id = $2 AND executed_at IS NULL`, record.Nanos(at), id)
	if err != nil {
		return db.errf(err, "claim preview %s", id)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM previews WHERE id = $1)`, id).Scan(&exists); err != nil {
		return db.errf(err, "claim preview %s", id)
	}
	if !exists {
		return core.NotFound("preview", id)
	}
	return core.Errorf(core.CodeConflict, "preview %s was already executed", id)
}

// ReleasePreview implements core.PreviewStore.
func (db *DB) ReleasePreview(ctx context.Context, id string) error {
	if _, err := db.pool.Exec(ctx, `UPDATE previews SET executed_at = NULL WHERE id = $1`, txt(id)); err != nil {
		return db.errf(err, "release preview %s", id)
	}
	return nil
}

// PutAttachment implements core.AttachmentStore.
func (db *DB) PutAttachment(ctx context.Context, a core.Attachment, data []byte) error {
	if len(a.SHA256) != 64 || a.MediaType == "" {
		return core.Errorf(core.CodeInvalid, "postgres: an attachment needs a sha256 and a media type")
	}
	if len(data) > maxAttachmentBytes {
		return core.Errorf(core.CodeInvalid, "postgres: an attachment of %d bytes is over the %d-byte limit", len(data), maxAttachmentBytes)
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO attachments (sha256, media_type, bytes, data, created_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (sha256) DO NOTHING`, txt(a.SHA256), txt(a.MediaType), len(data), data, record.Nanos(db.now())); err != nil {
		return db.errf(err, "put attachment %s", a.SHA256)
	}
	return nil
}

// GetAttachment implements core.AttachmentStore.
func (db *DB) GetAttachment(ctx context.Context, sha256 string) (core.Attachment, []byte, error) {
	a := core.Attachment{SHA256: sha256}
	var data []byte
	err := db.pool.QueryRow(ctx, `SELECT media_type, bytes, data FROM attachments WHERE sha256 = $1`, txt(sha256)).
		Scan(&a.MediaType, &a.Bytes, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return core.Attachment{}, nil, core.NotFound("attachment", sha256)
	}
	if err != nil {
		return core.Attachment{}, nil, db.errf(err, "get attachment %s", sha256)
	}
	return a, data, nil
}

// SaveSessionRepo implements core.RepoStore.
func (db *DB) SaveSessionRepo(ctx context.Context, r core.SessionRepo) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO session_repos (session_id, repo, worktree, branch, base_commit, removed,
		source_dirty) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (session_id) DO UPDATE SET repo = excluded.repo, worktree = excluded.worktree,
		branch = excluded.branch, base_commit = excluded.base_commit, removed = excluded.removed,
		source_dirty = excluded.source_dirty`,
		txt(r.SessionID), txt(r.Repo), txt(r.Worktree), txt(r.Branch), txt(r.BaseCommit), r.Removed, r.SourceDirty)
	if pgCode(err) == "23503" {
		return core.NotFound("session", r.SessionID)
	}
	if err != nil {
		return db.errf(err, "record the repository of session %s", r.SessionID)
	}
	return nil
}

// SessionRepos implements core.RepoStore.
func (db *DB) SessionRepos(ctx context.Context, ids ...string) (map[string]core.SessionRepo, error) {
	out := make(map[string]core.SessionRepo, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	clean := make([]string, len(ids))
	for i, id := range ids {
		clean[i] = txt(id)
	}
	rows, err := db.pool.Query(ctx, `SELECT session_id, repo, worktree, branch, base_commit, removed, source_dirty FROM session_repos
		WHERE session_id = ANY($1)`, clean)
	if err != nil {
		return nil, db.errf(err, "session repositories")
	}
	defer rows.Close()
	for rows.Next() {
		var r core.SessionRepo
		if err := rows.Scan(&r.SessionID, &r.Repo, &r.Worktree, &r.Branch, &r.BaseCommit, &r.Removed, &r.SourceDirty); err != nil {
			return nil, db.errf(err, "session repositories")
		}
		out[r.SessionID] = r
	}
	if err := rows.Err(); err != nil {
		return nil, db.errf(err, "session repositories")
	}
	return out, nil
}

// DiscoveredFile implements core.DiscoveryLog.
func (db *DB) DiscoveredFile(ctx context.Context, harness, path string) (core.DiscoveredFile, bool, error) {
	f := core.DiscoveredFile{Harness: harness, Path: path}
	var mtime int64
	err := db.pool.QueryRow(ctx, `SELECT size, mtime, session_id FROM discovered_files WHERE harness = $1 AND path = $2`,
		txt(harness), txt(path)).Scan(&f.Size, &mtime, &f.SessionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return f, false, nil
	}
	if err != nil {
		return f, false, db.errf(err, "discovered file %s", path)
	}
	f.ModTime = record.Unix(mtime)
	return f, true, nil
}

// RecordDiscovered implements core.DiscoveryLog.
func (db *DB) RecordDiscovered(ctx context.Context, f core.DiscoveredFile) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO discovered_files (harness, path, size, mtime, session_id, seen_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (harness, path) DO UPDATE SET size = excluded.size, mtime = excluded.mtime,
		session_id = excluded.session_id, seen_at = excluded.seen_at`,
		txt(f.Harness), txt(f.Path), f.Size, record.Nanos(f.ModTime), txt(f.SessionID), record.Nanos(db.now()))
	if err != nil {
		return db.errf(err, "record discovered %s", f.Path)
	}
	return nil
}

const nanosPerDay = int64(24 * time.Hour)

// usageKeys are the ledger's group expressions.
var usageKeys = map[core.UsageGroupBy]string{
	core.UsageBySession: "session_id",
	core.UsageByHarness: "harness",
	core.UsageByModel:   "model",
	core.UsageByDay:     "(floor(at::numeric / 86400000000000))::bigint::text",
}

// Usage implements core.UsageLedger: the ledger's rows in [Since, Until)
// (of one session, or of all), summed by group in one query.
func (db *DB) Usage(ctx context.Context, q core.UsageQuery) ([]core.UsageSum, error) {
	key, ok := usageKeys[q.GroupBy]
	if !ok {
		return nil, core.Errorf(core.CodeInvalid, "usage: unknown grouping %q (want session, harness, model or day)", q.GroupBy)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return []core.UsageSum{}, nil
	}
	where := "true"
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where += " AND " + cond + " $" + strconv.Itoa(len(args))
	}
	if q.SessionID != "" {
		add("session_id =", txt(q.SessionID))
	}
	if !q.Since.IsZero() {
		add("at >=", q.Since.UnixNano())
	}
	if !q.Until.IsZero() {
		add("at <", q.Until.UnixNano())
	}
	rows, err := db.pool.Query(ctx, `SELECT `+key+`, min(harness), max(harness), count(*),
		sum(input_tokens)::bigint, sum(output_tokens)::bigint, sum(cache_read_tokens)::bigint, sum(cache_write_tokens)::bigint,
		coalesce(sum(cost_usd), 0), coalesce(sum(CASE WHEN estimated THEN cost_usd END), 0), count(*) FILTER (WHERE cost_usd IS NULL)
		FROM usage_ledger WHERE `+where+` GROUP BY 1`, args...)
	if err != nil {
		return nil, db.errf(err, "usage")
	}
	defer rows.Close()
	out := []core.UsageSum{}
	for rows.Next() {
		var r core.UsageSum
		var minH, maxH string
		if err := rows.Scan(&r.Key, &minH, &maxH, &r.Reports, &r.InputTokens, &r.OutputTokens, &r.CacheReadTokens,
			&r.CacheWriteTokens, &r.CostUSD, &r.EstimatedUSD, &r.Unpriced); err != nil {
			return nil, db.errf(err, "usage")
		}
		if q.GroupBy == core.UsageByDay {
			d, _ := strconv.ParseInt(r.Key, 10, 64)
			r.Key = time.Unix(d*86400, 0).UTC().Format(time.DateOnly)
		}
		if minH == maxH {
			r.Harness = minH
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, db.errf(err, "usage")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
