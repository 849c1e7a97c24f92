package postgres

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// insertEntrySQL inserts rows given as arrays (one statement for a whole
// append), with each entry's search vector (a tsvector literal made in Go
// from its searchable text, tokens.go).
const insertEntrySQL = `INSERT INTO entries
	(id, session_id, parent_id, seq, kind, payload, native_id, token_estimate, created_at, search)
	SELECT u.id, $1, u.parent_id, u.seq, u.kind, u.payload, u.native_id, u.tokens, u.created,
		CASE WHEN u.text = '' THEN NULL ELSE u.text::tsvector END
	FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::bigint[], $10::text[])
		AS u(id, parent_id, seq, kind, payload, native_id, tokens, created, text)
	ORDER BY u.seq`

// insertLedgerSQL is insertEntrySQL with the usage ledger rows of the
// usage.reported entries among them, in the same statement.
const insertLedgerSQL = `WITH ins AS (` + insertEntrySQL + ` RETURNING rowid, id)
	INSERT INTO usage_ledger (entry_rowid, session_id, harness, model, at, input_tokens, output_tokens,
		cache_read_tokens, cache_write_tokens, cost_usd, estimated)
	SELECT ins.rowid, $1, $11, l.model, l.at, l.i, l.o, l.cr, l.cw, l.cost, l.est
	FROM ins JOIN unnest($12::text[], $13::text[], $14::bigint[], $15::bigint[], $16::bigint[], $17::bigint[],
		$18::bigint[], $19::float8[], $20::boolean[]) AS l(id, model, at, i, o, cr, cw, cost, est) ON l.id = ins.id`

// insertStmt is the statement that writes es (of one session, in seq
// order) and their usage ledger rows.
func (w *txWriter) insertStmt(harness string, es []core.Entry) stmt {
	n := len(es)
	ids, parents, kinds, payloads, natives, texts := make([]string, n), make([]*string, n), make([]string, n),
		make([]string, n), make([]*string, n), make([]string, n)
	seqs, tokens, created := make([]int64, n), make([]int64, n), make([]int64, n)
	var lid, lmodel []string
	var lat, li, lo, lcr, lcw []int64
	var lcost []*float64
	var lest []bool
	for i, e := range es {
		ids[i], kinds[i], payloads[i], seqs[i], tokens[i], created[i] = e.ID, string(e.Kind), string(e.Payload), e.Seq, e.TokenEstimate, record.Nanos(e.CreatedAt)
		if e.ParentID != "" {
			parents[i] = &es[i].ParentID
		}
		if e.NativeID != "" {
			natives[i] = &es[i].NativeID
		}
		texts[i] = searchText(e.Kind, e.Payload)
		if e.Kind != core.KindUsageReported {
			continue
		}
		// The ledger row: its tokens and cost, and when the usage happened
		// (the payload's "at" when it has one, else when it was recorded).
		u, ok := core.ParseUsage(e.Payload)
		if !ok {
			continue
		}
		at := record.Nanos(e.CreatedAt)
		if u.At != nil && core.Representable(*u.At) {
			at = u.At.UnixNano()
		}
		lid, lmodel = append(lid, e.ID), append(lmodel, txt(u.Model))
		lat, li, lo = append(lat, at), append(li, max(u.InputTokens, 0)), append(lo, max(u.OutputTokens, 0))
		lcr, lcw = append(lcr, max(u.CacheReadTokens, 0)), append(lcw, max(u.CacheWriteTokens, 0))
		lcost, lest = append(lcost, u.CostUSD), append(lest, u.CostEstimated)
	}
	args := []any{es[0].SessionID, ids, parents, seqs, kinds, payloads, natives, tokens, created, texts}
	if len(lid) == 0 {
		return stmt{insertEntrySQL, args}
	}
	return stmt{insertLedgerSQL, append(args, harness, lid, lmodel, lat, li, lo, lcr, lcw, lcost, lest)}
}

// knownIDs tells which native ids of entries the session has already
// (known) and which chosen entry ids are taken: one query each.
func (w *txWriter) knownIDs(ctx context.Context, sessionID string, entries []core.NewEntry) (known, taken map[string]bool, err error) {
	var natives, chosen []string
	for _, ne := range entries {
		if ne.NativeID != "" {
			natives = append(natives, ne.NativeID)
		}
		if ne.ID != "" {
			chosen = append(chosen, ne.ID)
		}
	}
	known, taken = map[string]bool{}, map[string]bool{}
	if len(natives) > 0 {
		if err := w.collect(ctx, known, `SELECT native_id FROM entries WHERE session_id = $1 AND native_id = ANY($2)`, sessionID, natives); err != nil {
			return nil, nil, err
		}
	}
	if len(chosen) > 0 {
		if err := w.collect(ctx, taken, `SELECT id FROM entries WHERE id = ANY($1)`, chosen); err != nil {
			return nil, nil, err
		}
	}
	return known, taken, nil
}

func (w *txWriter) collect(ctx context.Context, into map[string]bool, query string, args ...any) error {
	rows, err := w.tx.Query(ctx, query, args...)
	if err != nil {
		return w.db.errf(err, "check ids")
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return w.db.errf(err, "check ids")
		}
		into[s] = true
	}
	if err := rows.Err(); err != nil {
		return w.db.errf(err, "check ids")
	}
	return nil
}

// retime sets the time of the entry of sessionID whose native id is ne's
// to ne.At, when ne has a time.
func (w *txWriter) retime(ctx context.Context, sessionID string, ne core.NewEntry) error {
	if ne.NativeID == "" || ne.At.IsZero() || !core.Representable(ne.At) {
		return nil
	}
	t := record.Nanos(record.Norm(ne.At))
	if _, err := w.tx.Exec(ctx, `UPDATE entries SET created_at = $1 WHERE session_id = $2 AND native_id = $3 AND created_at <> $1`,
		t, sessionID, ne.NativeID); err != nil {
		return w.db.errf(err, "correct an entry's time")
	}
	return nil
}
