package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

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

// tsQuery is a query made for PostgreSQL: the tsquery literal that
// selects the hits, and for plain words the phrase that ranks first.
type tsQuery struct {
	match  string // "" when the query has no words (it matches nothing)
	phrase string // "" when there is no phrase ranking
	terms  []term // the words to highlight
	// narrow: every match must hold two words or more (words ANDed, a
	// phrase), so a query's matches are few enough to read them all;
	// otherwise (one word, OR, NOT, a prefix alone) searchSQL reads the
	// newest rows first.
	narrow bool
}

// term is a word of the query: a folded word, or a prefix.
type term struct {
	word   string
	prefix bool
}

// buildQuery translates Bridge's search syntax into a tsquery literal:
//
//	plain words          every word ('a' & 'b'), holding them as one phrase ranks first
//	"a phrase"           the words one after the other ('a' <-> 'phrase')
//	word*  "a phr"*      a prefix ('word':*), a phrase ending in one
//	a OR b, a AND b      either, both (AND is also implied between terms)
//	a NOT b              a without b
//	( … )                grouping
//
// as SQLite's FTS5 reads them. A word of several parts ("file.go") is the
// phrase of its parts, as FTS5 makes it. NEAR, column filters (':', '{}'),
// '^' and '+' are FTS5's alone: refused, with what to write instead.
func buildQuery(in string) (tsQuery, error) {
	s := strings.TrimSpace(in)
	if s == "" {
		return tsQuery{}, record.QueryError("search query is empty")
	}
	if !record.UsesSyntax(s) {
		var parts, words []string
		var terms []term
		for _, w := range strings.Fields(s) {
			p, ts := phraseOf(w, false)
			if p == "" {
				continue
			}
			parts = append(parts, p)
			terms = append(terms, ts...)
			for _, t := range ts {
				words = append(words, quoteLexeme(t.word))
			}
		}
		q := tsQuery{match: strings.Join(parts, " & "), terms: terms, narrow: len(terms) > 1}
		if len(parts) > 1 {
			q.phrase = strings.Join(words, " <-> ")
		}
		return q, nil
	}
	p := &queryParser{src: s}
	if err := p.lex(); err != nil {
		return tsQuery{}, err
	}
	if len(p.toks) == 0 {
		return tsQuery{}, nil
	}
	expr, err := p.or()
	if err != nil {
		return tsQuery{}, err
	}
	if p.i < len(p.toks) {
		return tsQuery{}, p.invalid(fmt.Sprintf("unexpected %q", p.toks[p.i].text))
	}
	return tsQuery{match: expr, terms: p.terms, narrow: p.narrow}, nil
}

// phraseOf is the tsquery of one word or phrase: its words in order
// ('a' <-> 'b'), the last a prefix when prefix is set; "" when it holds no
// word.
func phraseOf(text string, prefix bool) (string, []term) {
	toks := tokenize(text, 0)
	var parts []string
	var terms []term
	for i, t := range toks {
		if t.word == "" {
			continue
		}
		q := quoteLexeme(t.word)
		pre := prefix && i == len(toks)-1
		if pre {
			q += ":*"
		}
		parts = append(parts, q)
		terms = append(terms, term{t.word, pre})
	}
	switch len(parts) {
	case 0:
		return "", nil
	case 1:
		return parts[0], terms
	}
	return "(" + strings.Join(parts, " <-> ") + ")", terms
}

type qtok struct {
	kind byte // 'w' word, 'p' phrase, '(' ')', 'A' AND, 'O' OR, 'N' NOT
	text string
	star bool
}

type queryParser struct {
	src   string
	toks  []qtok
	i     int
	terms []term
	depth int // of parentheses
	// narrow: the query outside parentheses is an AND of two operands or
	// more, or one phrase of several words (tsQuery.narrow).
	narrow bool
}

func (p *queryParser) invalid(why string) error {
	hint := "; to find the text itself, put it in double quotes"
	if len(p.src) <= 80 && !strings.ContainsFunc(p.src, unicode.IsControl) {
		hint += ": " + `"` + strings.ReplaceAll(p.src, `"`, `""`) + `"`
	}
	return record.QueryError("search query %s is not valid: %s%s", core.Quote(p.src), why, hint)
}

// lex splits the query into words, phrases, parentheses and operators.
func (p *queryParser) lex() error {
	s := p.src
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')':
			p.toks = append(p.toks, qtok{kind: c, text: string(c)})
			i++
		case c == '"':
			var b strings.Builder
			j := i + 1
			closed := false
			for j < len(s) {
				if s[j] == '"' {
					if j+1 < len(s) && s[j+1] == '"' { // "" is a quote
						b.WriteByte('"')
						j += 2
						continue
					}
					closed = true
					j++
					break
				}
				b.WriteByte(s[j])
				j++
			}
			if !closed {
				return p.invalid("a double quote is not closed")
			}
			t := qtok{kind: 'p', text: b.String()}
			if j < len(s) && s[j] == '*' {
				t.star = true
				j++
			}
			p.toks = append(p.toks, t)
			i = j
		case c == '*':
			return p.invalid("'*' must follow a word or a phrase (word*)")
		case strings.IndexByte("^:{}+", c) >= 0:
			return p.invalid(fmt.Sprintf("%q is SQLite FTS5 syntax that search on PostgreSQL does not have (column filters, '^', '+')", string(c)))
		default:
			j := i
			for j < len(s) && strings.IndexByte(" \t\n\r()\"*^:{}+", s[j]) < 0 {
				j++
			}
			w := s[i:j]
			t := qtok{kind: 'w', text: w}
			switch w {
			case "AND":
				t.kind = 'A'
			case "OR":
				t.kind = 'O'
			case "NOT":
				t.kind = 'N'
			case "NEAR":
				return p.invalid("NEAR is SQLite FTS5 syntax that search on PostgreSQL does not have; use a phrase in double quotes")
			}
			if j < len(s) && s[j] == '*' {
				if t.kind != 'w' {
					return p.invalid("'*' must follow a word or a phrase (word*)")
				}
				t.star = true
				j++
			}
			p.toks = append(p.toks, t)
			i = j
		}
	}
	return nil
}

func (p *queryParser) peek() byte {
	if p.i < len(p.toks) {
		return p.toks[p.i].kind
	}
	return 0
}

// or := and ("OR" and)*
func (p *queryParser) or() (string, error) {
	top, ors := p.depth == 0, false
	defer func() {
		if top && ors {
			p.narrow = false // either side alone matches
		}
	}()
	left, err := p.and()
	if err != nil {
		return "", err
	}
	for p.peek() == 'O' {
		ors = true
		p.i++
		right, err := p.and()
		if err != nil {
			return "", err
		}
		left = join(left, " | ", right)
	}
	return left, nil
}

// and := not (["AND"] not)*
func (p *queryParser) and() (string, error) {
	terms := len(p.terms)
	left, err := p.not()
	if err != nil {
		return "", err
	}
	top := p.depth == 0
	if top {
		// one phrase of several words
		p.narrow = len(p.terms)-terms > 1 && strings.Contains(left, "<->")
	}
	for {
		switch p.peek() {
		case 'A':
			p.i++
		case 'w', 'p', '(':
		default:
			return left, nil
		}
		right, err := p.not()
		if err != nil {
			return "", err
		}
		if top && left != "" && right != "" {
			p.narrow = true
		}
		left = join(left, " & ", right)
	}
}

// not := primary ("NOT" primary)*
func (p *queryParser) not() (string, error) {
	left, err := p.primary()
	if err != nil {
		return "", err
	}
	for p.peek() == 'N' {
		p.i++
		terms := len(p.terms)
		right, err := p.primary()
		if err != nil {
			return "", err
		}
		p.terms = p.terms[:terms] // words after NOT are not highlighted
		if right != "" {
			if left == "" {
				return "", p.invalid("NOT needs words before it (a NOT b)")
			}
			left = "(" + left + " & !" + right + ")"
		}
	}
	return left, nil
}

// primary := "(" or ")" | word["*"] | phrase["*"]
func (p *queryParser) primary() (string, error) {
	if p.i >= len(p.toks) {
		return "", p.invalid("it ends in the middle of an expression (an open parenthesis or quote, or an operator without a word after it)")
	}
	t := p.toks[p.i]
	p.i++
	switch t.kind {
	case '(':
		p.depth++
		e, err := p.or()
		p.depth--
		if err != nil {
			return "", err
		}
		if p.peek() != ')' {
			return "", p.invalid("a parenthesis is not closed")
		}
		p.i++
		if e == "" {
			return "", nil
		}
		return "(" + e + ")", nil
	case 'w', 'p':
		q, ts := phraseOf(t.text, t.star)
		p.terms = append(p.terms, ts...)
		return q, nil
	}
	return "", p.invalid(fmt.Sprintf("unexpected %q", t.text))
}

// join joins two tsquery parts with op, either of which may be empty (a
// word without letters or digits).
func join(a, op, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + op + b
}

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
