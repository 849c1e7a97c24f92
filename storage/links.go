package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// maxLinkSteps bounds the jump search. It takes O(log depth) steps (about
// three per doubling of the depth), so this is never reached on a sound tree.
const maxLinkSteps = 4096

// A session's entries before it first branched are one chain: the entry at
// seq s has parent s-1 and depth s-1. Their entry_links rows are implicit
// (none is written, so appending to a session that never branched costs
// nothing more); the row at seq 0 of a branched session records how long
// that chain was (jump_seq), and every later entry has its own row. A
// branched session without the seq-0 row has a row for every entry.

// linkNext is the seq the search steps to from row s: the jump target
// while its seq is still >= ?3 (every entry jumped over is newer still,
// since seqs grow from parent to child), else the parent.
const linkNext = `(CASE WHEN s.jump_seq >= ?3 AND s.jump_seq < s.seq THEN s.jump_seq ELSE s.parent_seq END)`

// linkBeforeSQL searches from the entry at seq ?2 of session ?1 towards
// the root for the newest ancestor with seq < ?3; ?5 is the length of the
// implicit chain, where the search stops (the answer is then plain
// arithmetic). The last row is the answer, a root with seq >= ?3 (nothing
// before), a chain entry, or where the rows ran out.
const linkBeforeSQL = `WITH RECURSIVE s(seq, parent_seq, jump_seq, n) AS (
	SELECT ?2, l.parent_seq, l.jump_seq, 0 FROM (SELECT 1) LEFT JOIN entry_links l ON l.session_id = ?1 AND l.seq = ?2
	WHERE l.seq IS NOT NULL OR ?2 <= ?5
	UNION ALL
	SELECT ` + linkNext + `, l.parent_seq, l.jump_seq, s.n + 1 FROM s
	LEFT JOIN entry_links l ON l.session_id = ?1 AND l.seq = ` + linkNext + `
	WHERE s.seq >= ?3 AND s.seq > ?5 AND s.n < ?4 AND ` + linkNext + ` IS NOT NULL
		AND (l.seq IS NOT NULL OR ` + linkNext + ` <= ?5)
)
SELECT seq, parent_seq, n FROM s ORDER BY n DESC LIMIT 1`

// chainLenSQL reads the length of a branched session's implicit chain.
const chainLenSQL = `SELECT jump_seq FROM entry_links WHERE session_id = ? AND seq = 0`

// chainLen is how many of a branched session's first entries form its
// implicit chain (0: every entry has a row).
func chainLen(ctx context.Context, q querier, sessionID string) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, chainLenSQL, sessionID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("storage: read entry links of %s: %w", sessionID, err)
	}
	return n, nil
}

// linkedEntryBefore finds the newest entry with seq < beforeSeq on the
// branch that ends at the entry with headSeq, in a branched session, in
// O(log depth) index seeks. ok is false when entry_links cannot answer (a
// row is missing: an entry recorded with a broken parent link); the caller
// then walks the parent links, which names the problem. id is "" when no
// such entry exists; steps is how many links the search followed.
func linkedEntryBefore(ctx context.Context, q querier, sessionID string, headSeq, beforeSeq int64) (id string, ok bool, steps int, err error) {
	chain, err := chainLen(ctx, q, sessionID)
	if err != nil {
		return "", false, 0, err
	}
	var seq int64
	var parent sql.NullInt64
	err = q.QueryRowContext(ctx, linkBeforeSQL, sessionID, headSeq, beforeSeq, maxLinkSteps, chain).Scan(&seq, &parent, &steps)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, 0, nil
	}
	if err != nil {
		return "", false, 0, fmt.Errorf("storage: find entry before seq %d in session %s: %w", beforeSeq, sessionID, err)
	}
	found := int64(0)
	switch {
	case seq <= chain:
		// In the chain, the ancestors of seq are every seq below it.
		found = min(seq, beforeSeq-1)
	case seq < beforeSeq:
		found = seq
	case !parent.Valid:
		return "", true, steps, nil // reached a root: nothing before
	default:
		return "", false, steps, nil
	}
	if found < 1 {
		return "", true, steps, nil
	}
	err = q.QueryRowContext(ctx, `SELECT id FROM entries WHERE session_id = ? AND seq = ?`, sessionID, found).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, steps, nil
	}
	if err != nil {
		return "", false, 0, fmt.Errorf("storage: find entry before seq %d in session %s: %w", beforeSeq, sessionID, err)
	}
	return id, true, steps, nil
}

// link is one entry_links row: an entry's seq, depth and jump target.
type link struct{ seq, depth, jump int64 }

// jumpLen is how many levels the jump pointer of an entry at depth d
// reaches back by the skew-binary rule of entry_links (0 for a root). The
// rule depends on depths only, so this is a function of d: the lengths run
// 1 1 3 1 1 3 7 1 1 3 1 1 3 7 15 ..., each block of 2^k-1 being two blocks
// of 2^(k-1)-1 and then 2^k-1 itself.
func jumpLen(d int64) int64 {
	if d <= 0 {
		return 0
	}
	b := int64(1)
	for b < d {
		b = 2*b + 1
	}
	for d != b {
		b = (b - 1) / 2
		if d > b {
			d -= b
		}
	}
	return b
}

// childLink is the entry_links row of the entry at seq under parent p.
// When the jump goes to p's jump target's own target, jumpOf must give
// that target's jump (ok false when it has no row: neither has the child).
func childLink(seq int64, p link, jumpOf func(seq int64) (int64, bool, error)) (link, bool, error) {
	l := link{seq: seq, depth: p.depth + 1, jump: p.seq}
	if jumpLen(p.depth) == jumpLen(p.depth-jumpLen(p.depth)) {
		j, ok, err := jumpOf(p.jump)
		if !ok || err != nil {
			return link{}, false, err
		}
		l.jump = j
	}
	return l, true, nil
}

// linker computes the entry_links rows of the entries one call adds to a
// branched session and writes them in a few multi-row statements (flush,
// before the call ends). Rows of this call's entries are kept in memory;
// older ones are read by key, or computed for the implicit chain.
type linker struct {
	q         *stmtTx
	sessionID string
	chain     int64 // length of the implicit chain; -1 until read
	rows      map[int64]link
	pending   []any // session_id, seq, parent_seq, depth, jump_seq per row
}

func newLinker(q *stmtTx, sessionID string) *linker {
	return &linker{q: q, sessionID: sessionID, chain: -1, rows: map[int64]link{}}
}

// branch records that the session branches now: its entries 1..n are one
// chain (their rows stay implicit).
func (k *linker) branch(n int64) {
	if k == nil || n < 1 {
		return
	}
	k.chain = n
	k.pending = append(k.pending, k.sessionID, int64(0), nil, int64(0), n)
}

func (k *linker) get(ctx context.Context, seq int64) (link, bool, error) {
	if l, ok := k.rows[seq]; ok {
		return l, true, nil
	}
	l := link{seq: seq}
	err := k.q.QueryRowContext(ctx, `SELECT depth, jump_seq FROM entry_links WHERE session_id = ? AND seq = ?`,
		k.sessionID, seq).Scan(&l.depth, &l.jump)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return link{}, false, fmt.Errorf("storage: read entry link: %w", err)
	}
	if errors.Is(err, sql.ErrNoRows) {
		if k.chain < 0 {
			if k.chain, err = chainLen(ctx, k.q, k.sessionID); err != nil {
				return link{}, false, err
			}
		}
		if seq < 1 || seq > k.chain {
			return link{}, false, nil
		}
		l = chainLink(seq)
	}
	k.rows[seq] = l
	return l, true, nil
}

// chainLink is the implicit row of the entry at seq of the chain.
func chainLink(seq int64) link {
	d := seq - 1
	return link{seq: seq, depth: d, jump: seq - jumpLen(d)}
}

// add computes the row of the entry at seq, whose parent is at parentSeq
// (0 for a root). A parent without a row gives its child none either.
func (k *linker) add(ctx context.Context, seq, parentSeq int64) error {
	if k == nil {
		return nil // links turned off (benchmarks)
	}
	l := link{seq: seq, jump: seq}
	var parent any
	if parentSeq > 0 {
		p, ok, err := k.get(ctx, parentSeq)
		if err != nil || !ok {
			return err
		}
		l, ok, err = childLink(seq, p, func(s int64) (int64, bool, error) {
			j, ok, err := k.get(ctx, s)
			return j.jump, ok, err
		})
		if err != nil || !ok {
			return err
		}
		parent = parentSeq
	}
	k.rows[seq] = l
	k.pending = append(k.pending, k.sessionID, seq, parent, l.depth, l.jump)
	return nil
}

// flush writes the rows computed so far, in statements of 64, 32, ... 1
// rows (a few statement shapes, each prepared once).
func (k *linker) flush(ctx context.Context) error {
	if k == nil {
		return nil
	}
	for n := 64; len(k.pending) > 0; n /= 2 {
		for len(k.pending) >= 5*n {
			if _, err := k.q.ExecContext(ctx, insertLinksSQL(n), k.pending[:5*n]...); err != nil {
				return fmt.Errorf("storage: insert entry links: %w", err)
			}
			k.pending = k.pending[5*n:]
		}
	}
	return nil
}

var linkSQL sync.Map // rows -> statement text

// insertLinksSQL is the INSERT of n entry_links rows.
func insertLinksSQL(n int) string {
	if q, ok := linkSQL.Load(n); ok {
		return q.(string)
	}
	q := `INSERT INTO entry_links (session_id, seq, parent_seq, depth, jump_seq) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?), ", n), ", ")
	linkSQL.Store(n, q)
	return q
}

// backfillLinks is the Go step of migration 6: entry_links rows for every
// entry of the sessions that branched before it (the others need none until
// they branch), by the same rule as appends, one session at a time in seq
// order (a parent is always older than its child). It holds three integers
// per entry of the session at hand.
func backfillLinks(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT e.session_id, e.seq, e.parent_id IS NULL, p.seq
		FROM sessions s JOIN entries e ON e.session_id = s.id
		LEFT JOIN entries p ON p.id = e.parent_id AND p.session_id = e.session_id AND p.seq < e.seq
		WHERE s.branched
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
	jumpOf := func(seq int64) (int64, bool, error) {
		l, ok := find(seq)
		return l.jump, ok, nil
	}
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, insertLinksSQL(len(pending)/5), pending...); err != nil {
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
		l := link{seq: seq, jump: seq}
		var parent any
		if !root {
			p, ok := find(pseq.Int64)
			if !pseq.Valid || !ok {
				continue // a broken parent link (or under one): no row
			}
			if l, ok, _ = childLink(seq, p, jumpOf); !ok {
				continue
			}
			parent = pseq.Int64
		}
		seen = append(seen, l)
		pending = append(pending, sid, seq, parent, l.depth, l.jump)
		if len(pending) >= 5*128 {
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
