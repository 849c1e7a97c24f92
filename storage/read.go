package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// querier is what reads need: *sql.DB or *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const sessionCols = `id, harness, cwd, title, preset, model, effort, native_session_id, head_id,
	restore_mode, latest_checkpoint_id, archived, last_status, created_at, updated_at`

type scanner interface{ Scan(dest ...any) error }

func scanSession(sc scanner) (core.Session, error) {
	var s core.Session
	var created, updated int64
	err := sc.Scan(&s.ID, &s.Harness, &s.Cwd, &s.Title, &s.Preset, &s.Model, &s.Effort, &s.NativeSessionID,
		&s.HeadID, &s.RestoreMode, &s.LatestCheckpointID, &s.Archived, &s.LastStatus, &created, &updated)
	s.CreatedAt, s.UpdatedAt = record.Unix(created), record.Unix(updated)
	return s, err
}

func getSession(ctx context.Context, q querier, id string) (core.Session, error) {
	s, err := scanSession(q.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return core.Session{}, core.NotFound("session", id)
	}
	if err != nil {
		return core.Session{}, fmt.Errorf("storage: get session %s: %w", id, err)
	}
	return s, nil
}

// GetSession implements core.Store.
func (db *DB) GetSession(ctx context.Context, id string) (core.Session, error) {
	q, err := db.rq()
	if err != nil {
		return core.Session{}, err
	}
	return getSession(ctx, q, id)
}

// ListSessions implements core.Store: most recently updated first (ties by
// id, descending), archived sessions only with IncludeArchived. The cursor
// is opaque. Each page is an index seek (see listSQL).
func (db *DB) ListSessions(ctx context.Context, q core.ListQuery) ([]core.Session, string, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	query, args, err := listSQL(q, limit)
	if err != nil {
		return nil, "", err
	}
	rq, err := db.rq()
	if err != nil {
		return nil, "", err
	}
	rows, err := rq.QueryContext(ctx, query, args...) // prepared once per shape
	if err != nil {
		return nil, "", fmt.Errorf("storage: list sessions: %w", err)
	}
	defer rows.Close()
	out := []core.Session{}
	for len(out) <= limit && rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, "", fmt.Errorf("storage: list sessions: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("storage: list sessions: %w", err)
	}
	out, next := record.CutPage(out, limit)
	return out, next, nil
}

// listSQL is the query of one page of ListSessions (limit+1 rows, to tell
// whether another page follows; its LIMIT is a size class, see listLimit).
// Each archived value is one range of the index sessions_list (or
// sessions_harness_list with a harness), read newest first from the cursor:
// the row value (updated_at, id) < (?, ?) is a seek, so a page costs the
// same however many sessions come before or after it. With archived
// sessions included, the two ranges are merged (UNION ALL under one ORDER
// BY), still without sorting.
func listSQL(q core.ListQuery, limit int) (string, []any, error) {
	cond := ""
	var condArgs []any
	if q.Harness != "" {
		cond += " AND harness = ?"
		condArgs = append(condArgs, q.Harness)
	}
	if q.Cursor != "" {
		upd, id, err := record.DecodeCursor(q.Cursor)
		if err != nil {
			return "", nil, err
		}
		cond += " AND (updated_at, id) < (?, ?)"
		condArgs = append(condArgs, upd, id)
	}
	// archived is written into the text too: bound, it made SQLite compile
	// the statement again on every use (TestReadsKeepTheirCompiledStatements).
	arm := `SELECT ` + sessionCols + ` FROM sessions WHERE archived = %d` + cond
	query := fmt.Sprintf(arm, 0)
	args := condArgs
	if q.IncludeArchived {
		query += ` UNION ALL ` + fmt.Sprintf(arm, 1)
		args = append(append([]any{}, condArgs...), condArgs...)
	}
	query += ` ORDER BY updated_at DESC, id DESC LIMIT ` + strconv.Itoa(listLimit(limit))
	return query, args, nil
}

// listLimit is the LIMIT written into a list page's statement for a page
// of limit sessions: the size class (a power of two from 16 to 2^20, -1
// above: no limit) that holds limit+1 rows. SQLite plans with the value of
// a bound LIMIT, so a statement whose LIMIT is a parameter was compiled
// again on every page; with the limit in the text there are a few
// statements per shape, each compiled once. ListSessions stops reading at
// limit+1 rows, and the rows past it are never stepped to, so a larger
// class costs nothing.
func listLimit(limit int) int {
	if limit >= 1<<20 {
		return -1
	}
	return max(16, 1<<bits.Len(uint(limit)))
}

// FindSessionByNative implements core.Store; when several sessions share
// the native id, the most recently updated wins.
func (db *DB) FindSessionByNative(ctx context.Context, harness, nativeID string) (core.Session, error) {
	if nativeID == "" {
		return core.Session{}, core.NotFound("native session", nativeID)
	}
	rq, err := db.rq()
	if err != nil {
		return core.Session{}, err
	}
	s, err := scanSession(rq.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions
		WHERE harness = ? AND native_session_id = ? ORDER BY updated_at DESC, id DESC LIMIT 1`, harness, nativeID))
	if errors.Is(err, sql.ErrNoRows) {
		return core.Session{}, core.NotFound(harness+" native session", nativeID)
	}
	if err != nil {
		return core.Session{}, fmt.Errorf("storage: find native session %s: %w", nativeID, err)
	}
	return s, nil
}

const entryCols = `id, session_id, parent_id, seq, kind, payload, native_id, token_estimate, created_at`

// entryRow holds nullable scan targets for one entry row.
type entryRow struct {
	id, session, parent, kind, payload, native sql.NullString
	seq, tokens, created                       sql.NullInt64
}

func (r *entryRow) dest() []any {
	return []any{&r.id, &r.session, &r.parent, &r.seq, &r.kind, &r.payload, &r.native, &r.tokens, &r.created}
}

func (r *entryRow) entry() core.Entry {
	return core.Entry{
		ID: r.id.String, SessionID: r.session.String, ParentID: r.parent.String, Seq: r.seq.Int64,
		Kind: core.Kind(r.kind.String), Payload: core.ValidJSON([]byte(r.payload.String)), NativeID: r.native.String,
		TokenEstimate: r.tokens.Int64, CreatedAt: record.Unix(r.created.Int64),
	}
}

// GetEntry implements core.Store. Entries of kinds this Bridge does not
// know are returned as stored.
func (db *DB) GetEntry(ctx context.Context, id string) (core.Entry, error) {
	rq, err := db.rq()
	if err != nil {
		return core.Entry{}, err
	}
	var r entryRow
	err = rq.QueryRowContext(ctx, `SELECT `+entryCols+` FROM entries WHERE id = ?`, id).Scan(r.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return core.Entry{}, core.NotFound("entry", id)
	}
	if err != nil {
		return core.Entry{}, fmt.Errorf("storage: get entry %s: %w", id, err)
	}
	return r.entry(), nil
}

// Audit implements core.Store.
func (db *DB) Audit(ctx context.Context, entity, kind string) ([]core.AuditRecord, error) {
	where := []string{"1 = 1"}
	var args []any
	if entity != "" {
		where = append(where, "entity = ?")
		args = append(args, entity)
	}
	if kind != "" {
		where = append(where, "kind = ?")
		args = append(args, kind)
	}
	rq, err := db.rq()
	if err != nil {
		return nil, err
	}
	rows, err := rq.QueryContext(ctx, `SELECT id, source, kind, entity, body, time FROM audit WHERE `+
		strings.Join(where, " AND ")+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: audit: %w", err)
	}
	defer rows.Close()
	out := []core.AuditRecord{}
	for rows.Next() {
		var r core.AuditRecord
		var body string
		var t int64
		if err := rows.Scan(&r.ID, &r.Source, &r.Kind, &r.Entity, &body, &t); err != nil {
			return nil, fmt.Errorf("storage: audit: %w", err)
		}
		r.Body, r.Time = core.ValidJSON([]byte(body)), record.Unix(t)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: audit: %w", err)
	}
	return out, nil
}
