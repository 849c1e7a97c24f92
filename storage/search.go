package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// Snippet markers: the index never holds these two control characters (they
// are removed from indexed text), so they can delimit matches in snippets.
const (
	markOpen  = "\x01"
	markClose = "\x02"
)

// registerExtensions runs on every new connection: FTS5 (the driver's
// default build lacks it) and the auxiliary functions of search:
// bridge_phrase, which tells whether a row matched the query's first
// phrase, and bridge_snippet (see snippetFunc).
func registerExtensions(c *sqlite3.Conn) error {
	return fts5.RegisterCustom(c, func(api *fts5.API) error {
		if err := api.CreateFunction("bridge_snippet", snippetFunc); err != nil {
			return err
		}
		return api.CreateFunction("bridge_phrase", phraseFunc)
	})
}

// phraseFunc is bridge_phrase(entry_search): 1 when the row holds the
// query's phrases one right after the other (the words the user typed, as
// typed), else 0. Asked per matching row; the query itself only asks for
// every word (`"a" AND "b"`), which costs FTS5 less than also matching the
// phrase (`"a b" OR ("a" AND "b")`: a third doclist scan for bm25 and a
// position check in the main pass).
func phraseFunc(fts fts5.Context, ctx sqlite3.Context, _ ...sqlite3.Value) {
	var ends, next []int // token offsets where the chain so far ends
	for i := 0; i < fts.PhraseCount(); i++ {
		hits, err := fts.PhraseIter(i)
		if err != nil {
			ctx.ResultError(err)
			return
		}
		size := fts.PhraseSize(i)
		next = next[:0]
		for col, off := range hits {
			if col == 0 && (i == 0 || slices.Contains(ends, off)) {
				next = append(next, off+size)
			}
		}
		if len(next) == 0 {
			ctx.ResultInt(0)
			return
		}
		ends, next = next, ends
	}
	ctx.ResultInt(1)
}

// SearchText is the text of an entry that search indexes
// (record.SearchText), without the snippet markers.
func SearchText(kind core.Kind, payload []byte) string {
	s := record.SearchText(kind, payload)
	if strings.ContainsAny(s, markOpen+markClose) {
		s = strings.TrimSpace(strings.NewReplacer(markOpen, " ", markClose, " ").Replace(s))
	}
	return s
}

// The cost bound of one search: what a query may ask for (checked before
// anything runs; record.CheckQueryCost) and how long it may run
// (Options.SearchTimeout).
const (
	// MaxSearchQueryBytes bounds the text of a query.
	MaxSearchQueryBytes = record.MaxSearchQueryBytes
	// MaxSearchTerms bounds the words (tokens) of a query.
	MaxSearchTerms = record.MaxSearchTerms
	// MaxSearchPrefixTerms bounds its prefix terms (`word*`).
	MaxSearchPrefixTerms = record.MaxSearchPrefixTerms
)

// DefaultSearchTimeout is the default Options.SearchTimeout.
const DefaultSearchTimeout = 10 * time.Second

// Search implements core.Searcher. A query over the cost bound is refused
// before it runs (record.CheckQueryCost); one that runs longer than
// Options.SearchTimeout is interrupted and refused; ctx's cancellation (a
// client's $/cancelRequest, or its going away) interrupts it too.
func (db *DB) Search(ctx context.Context, q core.SearchQuery) (core.SearchPage, error) {
	pl, err := planSearch(q)
	if err != nil {
		return core.SearchPage{}, err
	}
	// The index first covers every entry recorded before this call.
	if err := db.catchUp(ctx, 0, nil); err != nil {
		return core.SearchPage{}, err
	}
	page := core.SearchPage{Hits: []core.SearchHit{}}
	qctx, cancel := context.WithTimeoutCause(ctx, db.searchTimeout, errSearchTimeout)
	defer cancel()
	err = func(ctx context.Context) error {
		tx, err := db.search.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return fmt.Errorf("storage: begin read: %w", err)
		}
		defer tx.Rollback() //nolint:errcheck // read-only; nothing to keep
		top, err := pl.rank(ctx, tx)
		if err != nil {
			return err
		}
		if len(top) > pl.limit {
			top = top[:pl.limit]
			page.NextCursor = strconv.Itoa(pl.offset + pl.limit)
		}
		if len(top) == 0 {
			return nil
		}
		page.Hits, err = pl.hits(ctx, tx, top)
		return err
	}(qctx)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return core.SearchPage{}, core.E(core.CodeCancelled, "search", context.Cause(ctx))
		case context.Cause(qctx) == errSearchTimeout:
			return core.SearchPage{}, record.QueryError("search query ran longer than the limit of %s; make it more specific (fewer prefix terms, more words)", db.searchTimeout)
		}
		return core.SearchPage{}, searchError(q.Query, err)
	}
	return page, nil
}

// searchPlan is a checked search: its FTS5 match, the page asked for, and
// the ranking query with its arguments.
type searchPlan struct {
	match         string
	limit, offset int
	rankSQL       string
	rankArgs      []any
}

// ranked is a row of a search's ranking.
type ranked struct {
	rowid int64
	score float64
}

// planSearch checks q and builds its ranking query.
func planSearch(q core.SearchQuery) (searchPlan, error) {
	if err := record.CheckSearch(q); err != nil {
		return searchPlan{}, err
	}
	match, phrased, err := ftsQuery(q.Query)
	if err != nil {
		return searchPlan{}, err
	}
	pl := searchPlan{match: match}
	if pl.limit, pl.offset, err = record.SearchPaging(q); err != nil {
		return searchPlan{}, err
	}
	phraseCol := "0"
	if phrased {
		phraseCol = "bridge_phrase(entry_search)"
	}
	where, args := searchFilters(q)
	args = append([]any{match}, args...)
	join := ""
	if len(where) > 0 {
		join = ` JOIN rec.entries e ON e.rowid = entry_search.rowid JOIN rec.sessions s ON s.id = e.session_id`
	}
	if q.SessionID == "" {
		// The temporary sessions a migration's summary worker ran in
		// (archived once done) repeat their source's text: left out
		// unless the search names one.
		where = append(where, `entry_search.rowid NOT IN (SELECT we.rowid FROM rec.sessions ws
			JOIN rec.entries we ON we.session_id = ws.id WHERE ws.archived <> 0 AND ws.title LIKE ?)`)
		args = append(args, core.HandoffWorkerTitle+"%")
	}
	if len(where) > 0 {
		where = append([]string{""}, where...)
	}
	pl.rankArgs = append(args, pl.limit+1, pl.offset)
	// First the page's rows, ranked; only then, for those rows alone, the
	// snippets and the rest (a snippet per matching row would cost more
	// than the ranking itself).
	pl.rankSQL = `SELECT entry_search.rowid, ` + phraseCol + ` AS phrase, bm25(entry_search) AS score
		FROM entry_search` + join + `
		WHERE entry_search MATCH ?` + strings.Join(where, " AND ") + `
		ORDER BY phrase DESC, score, entry_search.rowid
		LIMIT ? OFFSET ?`
	return pl, nil
}

// searchFilters are the conditions (and their arguments) of q's filters
// on the session and the entry.
func searchFilters(q core.SearchQuery) (where []string, args []any) {
	if q.Harness != "" {
		where = append(where, "s.harness = ?")
		args = append(args, q.Harness)
	}
	if q.Cwd != "" {
		where = append(where, "s.cwd = ?")
		args = append(args, q.Cwd)
	}
	if q.SessionID != "" {
		where = append(where, "e.session_id = ?")
		args = append(args, q.SessionID)
	}
	if !q.Since.IsZero() {
		where = append(where, "e.created_at >= ?")
		args = append(args, record.Nanos(q.Since))
	}
	if !q.Until.IsZero() {
		where = append(where, "e.created_at < ?")
		args = append(args, record.Nanos(q.Until))
	}
	return where, args
}

// rank runs the ranking: up to limit+1 rows, best first.
func (pl searchPlan) rank(ctx context.Context, tx *sql.Tx) ([]ranked, error) {
	var top []ranked
	rows, err := tx.QueryContext(ctx, pl.rankSQL, pl.rankArgs...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r ranked
		var phrase int
		if err := rows.Scan(&r.rowid, &phrase, &r.score); err != nil {
			return nil, err
		}
		top = append(top, r)
	}
	return top, rows.Err()
}

// hits reads the page's rows in one pass of the match from the first to
// the last of them (a query per row seeks each term's doclist from its
// start again: 20 such queries were most of a search's time), the rowid
// test kept out of FTS5's reach by the unary +. The query was accepted by
// the ranking: a failure here is Bridge's, not the user's (see
// searchError).
func (pl searchPlan) hits(ctx context.Context, tx *sql.Tx, top []ranked) ([]core.SearchHit, error) {
	lo, hi := top[0].rowid, top[0].rowid
	dargs := []any{pl.match, 0, 0}
	for _, r := range top {
		lo, hi = min(lo, r.rowid), max(hi, r.rowid)
		dargs = append(dargs, r.rowid)
	}
	dargs[1], dargs[2] = lo, hi
	detail := `SELECT entry_search.rowid, e.id, e.session_id, e.seq, e.kind, e.created_at, s.harness, s.title, s.cwd,
		bridge_snippet(entry_search, e.kind, e.payload)
		FROM entry_search
		JOIN rec.entries e ON e.rowid = entry_search.rowid
		JOIN rec.sessions s ON s.id = e.session_id
		WHERE entry_search MATCH ? AND entry_search.rowid BETWEEN ? AND ?
		AND +entry_search.rowid IN (?` + strings.Repeat(", ?", len(top)-1) + `)`
	byRow := make(map[int64]core.SearchHit, len(top))
	rows, err := tx.QueryContext(ctx, detail, dargs...)
	if err != nil {
		return nil, detailError{err}
	}
	defer rows.Close()
	for rows.Next() {
		var h core.SearchHit
		var rowid int64
		var kind string
		var snip sql.NullString
		var created int64
		if err := rows.Scan(&rowid, &h.EntryID, &h.SessionID, &h.Seq, &kind, &created,
			&h.Harness, &h.SessionTitle, &h.Cwd, &snip); err != nil {
			return nil, detailError{err}
		}
		h.Kind = core.Kind(kind)
		h.CreatedAt = record.Unix(created)
		h.Snippet, h.Highlights = splitMarks(snip.String)
		byRow[rowid] = h
	}
	if err := rows.Err(); err != nil {
		return nil, detailError{err}
	}
	rows.Close()
	hits := make([]core.SearchHit, 0, len(top))
	for _, r := range top {
		h, ok := byRow[r.rowid]
		if !ok {
			return nil, fmt.Errorf("search: ranked row %d has no entry", r.rowid)
		}
		h.Score = r.score
		hits = append(hits, h)
	}
	return hits, nil
}

// errSearchTimeout is the cause of a search's context once it has run
// past Options.SearchTimeout.
var errSearchTimeout = errors.New("search: over its time limit")

// detailError is a failure after the query was accepted (fetching the
// page's entries and snippets): never the user's query.
type detailError struct{ err error }

func (e detailError) Error() string { return e.err.Error() }
func (e detailError) Unwrap() error { return e.err }

// searchError turns a complaint about the query into a CodeInvalid error
// that says what is wrong; other failures stay internal. The statement
// itself is fixed, so an SQLITE_ERROR ("SQL logic error") can only come from
// the MATCH expression the user gave.
func searchError(query string, err error) error {
	var de detailError
	if errors.As(err, &de) {
		return fmt.Errorf("storage: search: page details: %w", de.err)
	}
	var se *sqlite3.Error
	if errors.As(err, &se) && se.Code() == sqlite3.NOMEM {
		return record.QueryError("search query needs more memory than a search may use; make it more specific (fewer prefix terms, more words)")
	}
	if errors.As(err, &se) && se.Code() == sqlite3.ERROR {
		msg := se.Error()
		if i := strings.LastIndex(msg, "SQL logic error: "); i >= 0 {
			msg = msg[i+len("SQL logic error: "):]
		}
		msg = strings.TrimPrefix(msg, "fts5: ")
		if strings.HasPrefix(msg, "no such column") {
			msg += " (a word followed by ':' names a column; put the word in double quotes)"
		} else {
			if msg == `syntax error near ""` {
				msg = "it ends in the middle of an expression (an open parenthesis or quote, or an operator without a word after it)"
			}
			// Parentheses, quotes, '*', ':' and AND/OR/NOT/NEAR are search
			// syntax; a phrase in double quotes finds the text as it is.
			if len(query) <= 80 && !strings.ContainsFunc(query, unicode.IsControl) {
				msg += fmt.Sprintf("; to find the text itself, put it in double quotes: %s", `"`+strings.ReplaceAll(query, `"`, `""`)+`"`)
			} else {
				msg += "; to find the text itself, put it in double quotes"
			}
		}
		return record.QueryError("search query %s is not valid: %.300s", core.Quote(query), msg)
	}
	return fmt.Errorf("storage: search: %w", err)
}

// ftsQuery turns user input into an FTS5 expression. Plain words become
// quoted terms (so "file.go" or "don't" need no escaping), joined as
// `"a" AND "b"`, and phrased is true: rows holding the words together, in
// order, rank first (bridge_phrase). Input using FTS5 syntax
// is passed through unchanged.
func ftsQuery(in string) (match string, phrased bool, err error) {
	s := strings.TrimSpace(in)
	if s == "" {
		return "", false, core.InvalidField("query", "search query is empty")
	}
	if !strings.ContainsRune(s, 0) && !record.UsesSyntax(s) {
		words := strings.Fields(s)
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = `"` + w + `"`
		}
		if len(words) == 1 {
			return quoted[0], false, nil
		}
		return strings.Join(quoted, " AND "), true, nil
	}
	return s, false, nil
}

// splitMarks removes the snippet markers and returns where they were, in
// code points.
func splitMarks(s string) (string, [][2]int) {
	var b strings.Builder
	var marks [][2]int
	n, start := 0, -1
	for _, r := range s {
		switch string(r) {
		case markOpen:
			start = n
		case markClose:
			if start >= 0 {
				marks = append(marks, [2]int{start, n})
				start = -1
			}
		default:
			b.WriteRune(r)
			n++
		}
	}
	return b.String(), marks
}
