package postgres

// A broad query's candidates: its newest matches, found in windows of rows
// whose size and way of reading follow the matches seen so far.

import (
	"context"
	"math"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/core"
)

// candidate is one match of a broad query, ranked.
type candidate struct {
	rowid  int64
	rank   float32
	phrase bool
}

// How a window of rows is read.
type reading int

const (
	// backwards along rowid, testing each row, stopping at the LIMIT.
	backwards reading = iota
	// ginWindow: the query's matches from the GIN index ANDed with the
	// window's pages (the BRIN index on rowid); only the pages holding
	// matches in the window are read.
	ginWindow
	// ginAll: every match from the GIN index, the window's bound tested on
	// each (for the rest of the rows: few matches).
	ginAll
)

// The costs of finding matches, in units of the time one row read
// backwards along rowid takes (its page read in order, the query tested on
// its search vector), measured roughly on the 1,000,000-entry benchmark
// record (BENCHMARKS.md): an entry of the GIN index's lists, which are
// read whole for every window (a word's, or a prefix's: the lists of every
// word it starts, merged, about three times the cost); a row the GIN
// index names (its page read out of order); and costBRINRows rows of a
// window bounded through the BRIN index cost one (its pages' bitmap).
const (
	costGINEntry       = 2
	costGINPrefixEntry = 6
	costGINRow         = 16
	costBRINRows       = 16
)

// window is the next window of rows to read: size rows below the last
// one read, and how.
type window struct {
	size int64
	read reading
}

// nextWindow is how broadCandidates reads on when found of the n
// candidates it looks for were in the newest scanned rows of a record
// whose newest rowid is top (prefix: the query has a prefix). The first
// window, of 4n rows, is read backwards: a query matching one row in 4 or
// more (a common word, a short prefix) has its candidates there. Then the
// rate found/scanned estimates where the missing ones are (a window that
// holds them with a quarter and three standard deviations to spare) and
// how many matches the rest holds (at most about (found+1)/scanned of
// it): the window is read backwards or through the GIN index, or all the
// rest is read through the GIN index, whichever costs least. A query with
// no match yet reads the rest through the GIN index.
// A variable for tests.
var nextWindow = func(n, found int, scanned, top int64, prefix bool) window {
	if scanned == 0 {
		return window{size: 4 * int64(n), read: backwards}
	}
	rest := top - scanned
	if found == 0 {
		return window{size: rest, read: ginAll}
	}
	need := float64(n - found)
	want := need*5/4 + 3*math.Sqrt(need) + 3 // matches the window should hold
	size := min(int64(want*float64(scanned)/float64(found)), rest)
	matches := (int64(found) + 1) * rest / scanned
	entry := int64(costGINEntry)
	if prefix {
		entry = costGINPrefixEntry
	}
	all := matches * (entry + costGINRow)
	inWindow := matches*entry + int64(want)*costGINRow + size/costBRINRows
	switch {
	case all <= inWindow && all < size:
		return window{size: rest, read: ginAll}
	case inWindow < size:
		return window{size: size, read: ginWindow}
	}
	return window{size: size, read: backwards}
}

// broadCandidates is the newest n matches of tq with q's filters, ranked:
// windows of rows, newest first (nextWindow), each read by its own
// statement, ORDER BY rowid DESC with a LIMIT of the candidates still
// missing, until n are found or the oldest row is read. The planner is
// told how to read each (enable_bitmapscan and enable_indexscan, SET
// LOCAL: for the rest of the read's transaction, whose page read either
// way suits): its estimate of a query's matches is a constant for most
// words, so it cannot choose.
func broadCandidates(ctx context.Context, tx querier, q core.SearchQuery, tq tsQuery, n int) ([]candidate, error) {
	var top int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(rowid), 0) FROM entries`).Scan(&top); err != nil {
		return nil, err
	}
	args := sqlArgs{tq.match}
	phrase := phraseSQL(tq, &args)
	filter := searchFilter(q, &args, false)
	hiArg, loArg, limitArg := args.add(int64(0)), args.add(int64(0)), args.add(0)
	bounds := ` AND e.rowid <= ` + hiArg + ` AND e.rowid > ` + loArg + `
		ORDER BY e.rowid DESC LIMIT ` + limitArg + `) c`
	rank := `SELECT c.rowid, ts_rank_cd(c.search, $1::tsquery), ` + phrase + ` FROM `
	windowSQL := rank + `(SELECT e.rowid, e.search FROM entries e
		WHERE e.search @@ $1::tsquery AND ` + filter + bounds
	// The matches first (OFFSET 0: planned alone, a GIN lookup), then the
	// filters and the bounds on them.
	allSQL := rank + `(SELECT e.rowid, e.search FROM (SELECT rowid, search, session_id, created_at FROM entries
			WHERE search @@ $1::tsquery OFFSET 0) e
		WHERE ` + filter + bounds
	settings := map[reading]string{
		backwards: `SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexscan = on`,
		ginWindow: `SET LOCAL enable_bitmapscan = on; SET LOCAL enable_indexscan = off`,
		ginAll:    `SET LOCAL enable_bitmapscan = on; SET LOCAL enable_indexscan = off`,
	}
	prefix := false
	for _, t := range tq.terms {
		prefix = prefix || t.prefix
	}
	var out []candidate
	told := ""
	for hi := top; hi > 0 && len(out) < n; {
		w := nextWindow(n, len(out), top-hi, top, prefix)
		lo := max(hi-max(w.size, 1), 0)
		if set := settings[w.read]; set != told {
			if _, err := tx.Exec(ctx, set); err != nil {
				return nil, err
			}
			told = set
		}
		query := windowSQL
		if w.read == ginAll {
			query = allSQL
		}
		args[len(args)-3], args[len(args)-2], args[len(args)-1] = hi, lo, n-len(out)
		// An unnamed statement, planned for this window's bounds.
		rows, err := tx.Query(ctx, query, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var c candidate
			if err := rows.Scan(&c.rowid, &c.rank, &c.phrase); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		hi = lo
	}
	return out, nil
}

// pageOf is the page of hits from offset on (and one more than limit when
// there is one) of a broad query's candidates: exact phrases first, then
// by rank, then oldest first, as searchHits orders a narrow query's.
func pageOf(ctx context.Context, tx querier, tq tsQuery, cands []candidate, limit, offset int) ([]core.SearchHit, error) {
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.phrase != b.phrase {
			return a.phrase
		}
		if a.rank != b.rank {
			return a.rank > b.rank
		}
		return a.rowid < b.rowid
	})
	hits := []core.SearchHit{}
	if offset >= len(cands) {
		return hits, nil
	}
	cands = cands[offset:min(len(cands), offset+limit+1)]
	ids := make([]int64, len(cands))
	at := make(map[int64]int, len(cands))
	for i, c := range cands {
		ids[i] = c.rowid
		at[c.rowid] = i
	}
	rows, err := tx.Query(ctx, `SELECT e.rowid, `+hitCols+`
		FROM entries e JOIN sessions s ON s.id = e.session_id WHERE e.rowid = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	page := make([]core.SearchHit, len(cands))
	got := 0
	for rows.Next() {
		var rowid int64
		var r hitRow
		if err := rows.Scan(append([]any{&rowid}, r.dest()...)...); err != nil {
			return nil, err
		}
		c := cands[at[rowid]]
		page[at[rowid]] = r.hit(tq, c.rank, c.phrase)
		got++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if got != len(cands) {
		return nil, core.Errorf(core.CodeInternal, "search: %d of the page's %d entries were read", got, len(cands))
	}
	return page, nil
}
