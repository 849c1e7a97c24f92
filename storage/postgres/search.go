package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// The cost bound of one search, storage's (record.CheckQueryCost).
const (
	MaxSearchQueryBytes  = record.MaxSearchQueryBytes
	MaxSearchTerms       = record.MaxSearchTerms
	MaxSearchPrefixTerms = record.MaxSearchPrefixTerms
)

// errSearchTimeout is the cause of a search's context once it has run
// past Options.SearchTimeout.
var errSearchTimeout = errors.New("search: over its time limit")

// Search implements core.Searcher on PostgreSQL full-text search: the
// entries whose tsvector matches the query, ranked by ts_rank_cd (for
// plain words, those holding them as one phrase first), with storage's
// filters, paging, snippets and cost bound.
func (db *DB) Search(ctx context.Context, q core.SearchQuery) (core.SearchPage, error) {
	if err := record.CheckSearch(q); err != nil {
		return core.SearchPage{}, err
	}
	tq, err := buildQuery(q.Query)
	if err != nil {
		return core.SearchPage{}, err
	}
	limit, offset, err := record.SearchPaging(q)
	if err != nil {
		return core.SearchPage{}, err
	}
	page := core.SearchPage{Hits: []core.SearchHit{}}
	if tq.match == "" {
		return page, nil // no word to look for
	}
	qctx, cancel := context.WithTimeoutCause(ctx, db.searchTimeout, errSearchTimeout)
	defer cancel()
	err = db.read(qctx, func(tx querier) error {
		var top int64
		mode := []any{}
		if !tq.narrow {
			if err := tx.QueryRow(qctx, `SELECT coalesce(max(rowid), 0) FROM entries`).Scan(&top); err != nil {
				return err
			}
			// An unnamed statement, planned for these windows each time:
			// a plan made for any window could read each one whole.
			mode = append(mode, pgx.QueryExecModeCacheDescribe)
		}
		query, args := searchSQL(q, tq, limit, offset, top)
		rows, err := tx.Query(qctx, query, append(mode, args...)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			h, err := scanHit(rows, tq)
			if err != nil {
				return err
			}
			page.Hits = append(page.Hits, h)
		}
		return rows.Err()
	})
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return core.SearchPage{}, core.E(core.CodeCancelled, "search", context.Cause(ctx))
		case context.Cause(qctx) == errSearchTimeout:
			return core.SearchPage{}, record.QueryError("search query ran longer than the limit of %s; make it more specific (fewer prefix terms, more words)", db.searchTimeout)
		}
		return core.SearchPage{}, db.errf(err, "search")
	}
	if len(page.Hits) > limit {
		page.Hits = page.Hits[:limit]
		page.NextCursor = strconv.Itoa(offset + limit)
	}
	return page, nil
}

// rankCandidates is how many of a query's newest matches are ranked at
// least (more when the page asks for more): ranking every match of a
// broad query (an OR of common words, a short prefix) reads every
// matching row, seconds over a million entries.
const rankCandidates = 500

// Migration 110: a BRIN index of entries by rowid (a few hundred KB for a
// million entries; entries are appended, so rowid follows the table's
// physical order), which lets a search read a window of the newest rows
// (searchSQL) without visiting the rows outside it.
var _ = func() int {
	migrations = append(migrations, migration{110, "entries_rowid_brin", `
CREATE INDEX entries_rowid_brin ON entries USING brin (rowid) WITH (pages_per_range = 32);
`})
	return 0
}()

// The windows of rows a broad search looks for its candidates in, newest
// first (searchSQL): the first holds searchWindow rows per candidate, each
// next one searchGrowth times as many as the one before.
const (
	searchWindow = 4
	searchGrowth = 4
)

// searchSQL is the statement of a search and its arguments: the newest
// matches of tq with q's filters (rankCandidates, or the page's end if
// further), exact phrases first, then by rank, the page from offset on and
// one hit more than limit. top is the newest rowid of the record.
//
// A narrow query (tsQuery.narrow) reads its matches from the GIN index in
// one subquery. A broad one looks for them in windows of rows, newest
// first, each searchGrowth times the one before, the last reaching the
// oldest row: one subquery per window, ORDER BY rowid DESC LIMIT n each,
// joined by UNION ALL under LIMIT n, so the server runs a window only
// while the newer ones have not given n matches yet. In each window the
// planner reads the rows backwards along rowid (many matches: it stops at
// n) or takes the matches from the GIN index ANDed with the window's pages
// from the BRIN index (fewer: it reads only the pages holding them), so
// no plan reads the whole table for a broad query that turns out rare, or
// every match of a common one. Only the page's rows are read whole, after
// ranking.
func searchSQL(q core.SearchQuery, tq tsQuery, limit, offset int, top int64) (string, []any) {
	args := []any{tq.match}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	phrase := "false"
	if tq.phrase != "" {
		phrase = "c.search @@ " + arg(tq.phrase) + "::tsquery"
	}
	var where, of []string // of the entry, of its session
	if q.Harness != "" {
		of = append(of, "harness = "+arg(txt(q.Harness)))
	}
	if q.Cwd != "" {
		of = append(of, "cwd = "+arg(txt(q.Cwd)))
	}
	if q.SessionID != "" {
		where = append(where, "e.session_id = "+arg(txt(q.SessionID)))
	} else {
		// The temporary sessions a migration's summary worker ran in
		// (archived once done) repeat their source's text: left out
		// unless the search names one.
		of = append(of, "NOT (archived AND starts_with(title, "+arg(core.HandoffWorkerTitle)+"))")
	}
	if !q.Since.IsZero() {
		where = append(where, "e.created_at >= "+arg(record.Nanos(q.Since)))
	}
	if !q.Until.IsZero() {
		where = append(where, "e.created_at < "+arg(record.Nanos(q.Until)))
	}
	n := max(rankCandidates, offset+limit+1)
	nArg := arg(n)
	if tq.narrow {
		// One subquery with the session joined: the statement the server
		// plans fastest, and a narrow query's plan is a GIN lookup.
		query := `SELECT c.id, c.session_id, c.seq, c.kind, c.created_at, c.harness, c.title, c.cwd, c.payload,
			ts_rank_cd(c.search, $1::tsquery) AS rank, ` + phrase + ` AS phrase
			FROM (SELECT e.id, e.session_id, e.seq, e.kind, e.created_at, s.harness, s.title, s.cwd, e.payload, e.search, e.rowid
				FROM entries e JOIN sessions s ON s.id = e.session_id
				WHERE e.search @@ $1::tsquery AND ` + strings.Join(append(where, of...), " AND ") + `
				ORDER BY e.rowid DESC LIMIT ` + nArg + `) c
			ORDER BY phrase DESC, rank DESC, c.rowid
			LIMIT ` + arg(limit+1) + ` OFFSET ` + arg(offset)
		return query, args
	}
	if len(of) > 0 {
		where = append(where, "e.session_id IN (SELECT id FROM sessions WHERE "+strings.Join(of, " AND ")+")")
	}
	filter := strings.Join(where, " AND ")
	var windows []string
	hi, size := top, int64(n)*searchWindow
	for first := true; ; first = false {
		bound := ""
		if !first {
			bound = " AND e.rowid <= " + arg(hi)
		}
		lo := hi - size
		if lo > 0 {
			bound += " AND e.rowid > " + arg(lo)
		}
		windows = append(windows, `(SELECT e.rowid, e.search FROM entries e
			WHERE e.search @@ $1::tsquery AND `+filter+bound+`
			ORDER BY e.rowid DESC LIMIT `+nArg+`)`)
		if lo <= 0 {
			break
		}
		hi, size = lo, size*searchGrowth
	}
	query := `SELECT e.id, e.session_id, e.seq, e.kind, e.created_at, s.harness, s.title, s.cwd, e.payload, r.rank, r.phrase
		FROM (SELECT c.rowid, ts_rank_cd(c.search, $1::tsquery) AS rank, ` + phrase + ` AS phrase
			FROM (SELECT * FROM (` + strings.Join(windows, "\n\t\tUNION ALL ") + `) w LIMIT ` + nArg + `) c
			ORDER BY phrase DESC, rank DESC, c.rowid
			LIMIT ` + arg(limit+1) + ` OFFSET ` + arg(offset) + `) r
		JOIN entries e ON e.rowid = r.rowid JOIN sessions s ON s.id = e.session_id
		ORDER BY r.phrase DESC, r.rank DESC, r.rowid`
	return query, args
}

// scanHit reads one hit of searchSQL's rows, with its snippet.
func scanHit(rows pgx.Rows, tq tsQuery) (core.SearchHit, error) {
	var h core.SearchHit
	var created int64
	var payload string
	var rank float32
	var phrased bool
	if err := rows.Scan(&h.EntryID, &h.SessionID, &h.Seq, &h.Kind, &created, &h.Harness, &h.SessionTitle, &h.Cwd,
		&payload, &rank, &phrased); err != nil {
		return h, err
	}
	h.CreatedAt = record.Unix(created)
	h.Score = -float64(rank)
	if phrased {
		h.Score -= 1000 // an exact phrase ranks first, as with SQLite
	}
	h.Snippet, h.Highlights = snippet(record.SearchText(h.Kind, []byte(payload)), tq.terms)
	return h, nil
}

// snippetTokens is how many words of an entry's text a snippet shows.
const snippetTokens = 24

// snippet is the part of text around the best cluster of the query's
// words, with the matched words' places in code points, and "…" where
// text was cut (storage's snippet, made in Go from the same text).
func snippet(text string, terms []term) (string, [][2]int) {
	if text == "" {
		return "", nil
	}
	toks := tokenize(text, 0)
	if len(toks) == 0 {
		return "", nil
	}
	matches := func(w string) int { // which term, -1 for none
		for i, t := range terms {
			if w == t.word || t.prefix && strings.HasPrefix(w, t.word) {
				return i
			}
		}
		return -1
	}
	hit := make([]int, len(toks))
	var at []int
	for i, t := range toks {
		hit[i] = matches(t.word)
		if hit[i] >= 0 {
			at = append(at, i)
		}
	}
	// The window holding the most different terms, then the most matches;
	// it starts a few words before its first match.
	start, best := 0, -1
	for _, a := range at {
		c := max(0, min(a-4, len(toks)-snippetTokens))
		seen := map[int]bool{}
		n := 0
		for _, b := range at {
			if b >= c && b < c+snippetTokens {
				seen[hit[b]] = true
				n++
			}
		}
		if score := len(seen)*1000 + n; score > best {
			start, best = c, score
		}
	}
	end := min(start+snippetTokens, len(toks))
	var b strings.Builder
	var marks [][2]int
	runes := 0
	write := func(s string) {
		b.WriteString(s)
		runes += len([]rune(s))
	}
	if start > 0 {
		write("…")
	}
	pos := toks[start].from
	open := -1
	for k := start; k < end; k++ {
		t := toks[k]
		if open >= 0 && hit[k] < 0 {
			marks = append(marks, [2]int{open, runes})
			open = -1
		}
		write(text[pos:t.from])
		if hit[k] >= 0 && open < 0 {
			open = runes
		}
		write(text[t.from:t.to])
		pos = t.to
	}
	if open >= 0 {
		marks = append(marks, [2]int{open, runes})
	}
	if end < len(toks) {
		write("…")
	} else {
		write(text[pos:])
	}
	return b.String(), marks
}
