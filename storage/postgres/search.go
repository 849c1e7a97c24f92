package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"

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
		hits, err := db.searchHits(qctx, tx, q, tq, limit, offset)
		page.Hits = hits
		return err
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
// through the GIN index (broadCandidates) without visiting the rows
// outside it.
var _ = func() int {
	migrations = append(migrations, migration{110, "entries_rowid_brin", `
CREATE INDEX entries_rowid_brin ON entries USING brin (rowid) WITH (pages_per_range = 32);
`})
	return 0
}()

// sqlArgs are a statement's arguments as it is written.
type sqlArgs []any

// add appends v and returns its placeholder.
func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// searchFilter is the condition on an entry e of q's filters (harness,
// cwd, session, time), with its arguments added to args; joined: the
// statement joins e's session (its columns are named as they are).
func searchFilter(q core.SearchQuery, args *sqlArgs, joined bool) string {
	var where, of []string // of the entry, of its session
	if q.Harness != "" {
		of = append(of, "harness = "+args.add(txt(q.Harness)))
	}
	if q.Cwd != "" {
		of = append(of, "cwd = "+args.add(txt(q.Cwd)))
	}
	if q.SessionID != "" {
		where = append(where, "e.session_id = "+args.add(txt(q.SessionID)))
	} else {
		// The temporary sessions a migration's summary worker ran in
		// (archived once done) repeat their source's text: left out
		// unless the search names one.
		of = append(of, "NOT (archived AND starts_with(title, "+args.add(core.HandoffWorkerTitle)+"))")
	}
	if !q.Since.IsZero() {
		where = append(where, "e.created_at >= "+args.add(record.Nanos(q.Since)))
	}
	if !q.Until.IsZero() {
		where = append(where, "e.created_at < "+args.add(record.Nanos(q.Until)))
	}
	if joined {
		where = append(where, of...)
	} else if len(of) > 0 {
		where = append(where, "e.session_id IN (SELECT id FROM sessions WHERE "+strings.Join(of, " AND ")+")")
	}
	return strings.Join(where, " AND ")
}

// phraseSQL is the column telling whether c.search holds tq's words as
// one phrase (false when tq has no phrase), with its argument added.
func phraseSQL(tq tsQuery, args *sqlArgs) string {
	if tq.phrase == "" {
		return "false"
	}
	return "c.search @@ " + args.add(tq.phrase) + "::tsquery"
}

// hitCols are the columns of a hit (hitRow), of an entry e and its
// session s.
const hitCols = `e.id, e.session_id, e.seq, e.kind, e.created_at, s.harness, s.title, s.cwd, e.payload`

// searchHits is the page of q's hits from offset on, and one hit more
// than limit when there is one: of the newest matches of tq with q's
// filters (rankCandidates, or the page's end if further), exact phrases
// first, then by rank, then oldest first.
//
// A narrow query (tsQuery.narrow) reads its matches from the GIN index
// in one statement, ranked by the server. A broad one looks for its
// newest matches in windows of rows (broadCandidates), and only the
// page's rows are read whole.
func (db *DB) searchHits(ctx context.Context, tx querier, q core.SearchQuery, tq tsQuery, limit, offset int) ([]core.SearchHit, error) {
	n := max(rankCandidates, offset+limit+1)
	if !tq.narrow {
		cands, err := broadCandidates(ctx, tx, q, tq, n)
		if err != nil {
			return nil, err
		}
		return pageOf(ctx, tx, tq, cands, limit, offset)
	}
	args := sqlArgs{tq.match}
	phrase := phraseSQL(tq, &args)
	filter := searchFilter(q, &args, true)
	// One subquery with the session joined: the statement the server
	// plans fastest, and a narrow query's plan is a GIN lookup.
	query := `SELECT c.id, c.session_id, c.seq, c.kind, c.created_at, c.harness, c.title, c.cwd, c.payload,
		ts_rank_cd(c.search, $1::tsquery) AS rank, ` + phrase + ` AS phrase
		FROM (SELECT ` + hitCols + `, e.search, e.rowid
			FROM entries e JOIN sessions s ON s.id = e.session_id
			WHERE e.search @@ $1::tsquery AND ` + filter + `
			ORDER BY e.rowid DESC LIMIT ` + args.add(n) + `) c
		ORDER BY phrase DESC, rank DESC, c.rowid
		LIMIT ` + args.add(limit+1) + ` OFFSET ` + args.add(offset)
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	hits := []core.SearchHit{}
	for rows.Next() {
		var r hitRow
		var rank float32
		var phrased bool
		if err := rows.Scan(append(r.dest(), &rank, &phrased)...); err != nil {
			return nil, err
		}
		hits = append(hits, r.hit(tq, rank, phrased))
	}
	return hits, rows.Err()
}

// hitRow is one row of hitCols as read.
type hitRow struct {
	h       core.SearchHit
	created int64
	payload string
}

func (r *hitRow) dest() []any {
	h := &r.h
	return []any{&h.EntryID, &h.SessionID, &h.Seq, &h.Kind, &r.created, &h.Harness, &h.SessionTitle, &h.Cwd, &r.payload}
}

// hit is the row's hit: its time, its score (an exact phrase ranks first,
// as with SQLite) and its snippet.
func (r *hitRow) hit(tq tsQuery, rank float32, phrased bool) core.SearchHit {
	h := r.h
	h.CreatedAt = record.Unix(r.created)
	h.Score = -float64(rank)
	if phrased {
		h.Score -= 1000
	}
	h.Snippet, h.Highlights = snippet(record.SearchText(h.Kind, []byte(r.payload)), tq.terms)
	return h
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
