package storage

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
)

// maxLinkSteps bounds the jump search. It takes O(log depth) steps (about
// three per doubling of the depth), so this is never reached on a sound tree.
const maxLinkSteps = 4096

// linkBeforeSQL follows entry_links from the entry at seq ?2 of session ?1
// towards the root: to the jump target while its seq is still >= ?3 (every
// entry jumped over is newer still, since seqs grow from parent to child),
// else to the parent. The last row is the newest ancestor with seq < ?3, a
// root with seq >= ?3 (nothing before), or where the rows ran out.
const linkBeforeSQL = `WITH RECURSIVE s(seq, parent_seq, jump_seq, n) AS (
	SELECT seq, parent_seq, jump_seq, 0 FROM entry_links WHERE session_id = ?1 AND seq = ?2
	UNION ALL
	SELECT l.seq, l.parent_seq, l.jump_seq, s.n + 1 FROM s JOIN entry_links l
		ON l.session_id = ?1
		AND l.seq = CASE WHEN s.jump_seq >= ?3 AND s.jump_seq < s.seq THEN s.jump_seq ELSE s.parent_seq END
	WHERE s.seq >= ?3 AND s.n < ?4
)
SELECT s.seq, s.parent_seq, e.id FROM s LEFT JOIN entries e ON e.session_id = ?1 AND e.seq = s.seq
ORDER BY s.n DESC LIMIT 1`

// linkedEntryBefore finds the newest entry with seq < beforeSeq on the
// branch that ends at the entry with headSeq, in O(log depth) index seeks.
// ok is false when entry_links cannot answer (a row is missing: an entry
// recorded with a broken parent link); the caller then walks the parent
// links, which names the problem. id is "" when no such entry exists.
func linkedEntryBefore(ctx context.Context, q querier, sessionID string, headSeq, beforeSeq int64) (id string, ok bool, err error) {
	var seq int64
	var parent sql.NullInt64
	var eid sql.NullString
	err = q.QueryRowContext(ctx, linkBeforeSQL, sessionID, headSeq, beforeSeq, maxLinkSteps).Scan(&seq, &parent, &eid)
	if err == sql.ErrNoRows {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("storage: find entry before seq %d in session %s: %w", beforeSeq, sessionID, err)
	}
	switch {
	case seq < beforeSeq && eid.Valid:
		return eid.String, true, nil
	case seq >= beforeSeq && !parent.Valid:
		return "", true, nil // reached the root: nothing before
	default:
		return "", false, nil
	}
}

// link is one entry_links row of the backfill.
type link struct{ seq, depth, jump int64 }

// backfillLinks is the Go step of migration 6: entry_links rows for the
// entries recorded before it, by the trigger's rule, one session at a time
// in seq order (a parent is always older than its child). It holds three
// integers per entry of the session at hand.
func backfillLinks(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT e.session_id, e.seq, e.parent_id IS NULL, p.seq
		FROM entries e LEFT JOIN entries p ON p.id = e.parent_id AND p.session_id = e.session_id AND p.seq < e.seq
		ORDER BY e.session_id, e.seq`)
	if err != nil {
		return fmt.Errorf("backfill entry links: %w", err)
	}
	defer rows.Close()
	var (
		session string
		seen    []link // this session's rows, by seq
		pending []any  // rows to insert, 5 values each
	)
	find := func(seq int64) (link, bool) {
		i := sort.Search(len(seen), func(i int) bool { return seen[i].seq >= seq })
		if i < len(seen) && seen[i].seq == seq {
			return seen[i], true
		}
		return link{}, false
	}
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		n := len(pending) / 5
		q := `INSERT OR IGNORE INTO entry_links (session_id, seq, parent_seq, depth, jump_seq) VALUES ` +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?), ", n), ", ")
		if _, err := tx.ExecContext(ctx, q, pending...); err != nil {
			return fmt.Errorf("backfill entry links: %w", err)
		}
		pending = pending[:0]
		return nil
	}
	for rows.Next() {
		var sid string
		var seq int64
		var root bool
		var pseq sql.NullInt64
		if err := rows.Scan(&sid, &seq, &root, &pseq); err != nil {
			return fmt.Errorf("backfill entry links: %w", err)
		}
		if sid != session {
			session, seen = sid, seen[:0]
		}
		var l link
		switch {
		case root:
			l = link{seq: seq, depth: 0, jump: seq}
		case !pseq.Valid:
			continue // broken parent link: no row, as the trigger does
		default:
			lp, ok1 := find(pseq.Int64)
			lj, ok2 := find(lp.jump)
			ljj, ok3 := find(lj.jump)
			if !ok1 || !ok2 || !ok3 {
				continue
			}
			l = link{seq: seq, depth: lp.depth + 1, jump: pseq.Int64}
			if lp.depth-lj.depth == lj.depth-ljj.depth {
				l.jump = lj.jump
			}
		}
		seen = append(seen, l)
		var parent any
		if !root {
			parent = pseq.Int64
		}
		pending = append(pending, sid, seq, parent, l.depth, l.jump)
		if len(pending) >= 5*180 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("backfill entry links: %w", err)
	}
	return flush()
}
