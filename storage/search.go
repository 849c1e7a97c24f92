package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/bridge-dev/bridge/core"
)

// maxIndexedText bounds the text one entry contributes to the search index
// (a tool's output can be megabytes; its first 64 KiB are searchable).
const maxIndexedText = 64 << 10

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

// searchKinds are the kinds whose text is indexed. Bookkeeping kinds
// (status, usage, model changes, raw harness events) are not.
var searchKinds = map[core.Kind]bool{
	core.KindUserMessage: true, core.KindAssistantMessage: true,
	core.KindToolStarted: true, core.KindToolCompleted: true,
	core.KindApprovalRequested: true, core.KindWorkerResult: true, core.KindArtifactCreated: true,
	core.KindContextCompacted: true, core.KindCheckpoint: true, core.KindBranchSummary: true,
	core.KindMigrationHandoff: true, core.KindCompactionFailed: true, core.KindSessionResumeFail: true,
	core.KindPlanUpdated: true,
}

// skipKey reports whether a payload member holds an identifier or a code,
// not text a user would search for.
func skipKey(k string) bool {
	switch k {
	case "id", "sha256", "mediaType", "type", "harness", "trigger", "provenance", "status", "mode", "data",
		"model", "effort", "role", "finish", "agent", "cwd", "root", "raw":
		return true
	}
	return strings.HasSuffix(k, "Id") || strings.HasSuffix(k, "ID") || strings.HasSuffix(k, "Ids")
}

// SearchText is the text of an entry that search indexes: every string in
// its payload except identifiers, for the kinds in searchKinds, at most
// 64 KiB. It returns "" for entries without searchable text.
func SearchText(kind core.Kind, payload []byte) string {
	if !searchKinds[kind] {
		return ""
	}
	var b strings.Builder
	(&textScanner{raw: payload, b: &b}).value(0, false)
	s := b.String()
	if len(s) > maxIndexedText {
		s = strings.ToValidUTF8(s[:maxIndexedText], "")
	}
	if strings.ContainsAny(s, markOpen+markClose) {
		s = strings.NewReplacer(markOpen, " ", markClose, " ").Replace(s)
	}
	return strings.TrimSpace(s)
}

// Search implements core.Searcher.
func (db *DB) Search(ctx context.Context, q core.SearchQuery) (core.SearchPage, error) {
	match, phrased, err := ftsQuery(q.Query)
	if err != nil {
		return core.SearchPage{}, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	if limit > 200 {
		limit = 200
	}
	offset := 0
	if q.Cursor != "" {
		offset, err = strconv.Atoi(q.Cursor)
		if err != nil || offset < 0 {
			return core.SearchPage{}, core.Errorf(core.CodeInvalid, "search: cursor %q is not one this search returned", q.Cursor)
		}
	}
	phraseCol := "0"
	if phrased {
		phraseCol = "bridge_phrase(entry_search)"
	}
	var where []string
	args := []any{match}
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
		args = append(args, nanos(q.Since))
	}
	if !q.Until.IsZero() {
		where = append(where, "e.created_at < ?")
		args = append(args, nanos(q.Until))
	}
	join := ""
	if len(where) > 0 {
		join = ` JOIN rec.entries e ON e.rowid = entry_search.rowid JOIN rec.sessions s ON s.id = e.session_id`
		where = append([]string{""}, where...)
	}
	args = append(args, limit+1, offset)
	// First the page's rows, ranked; only then, for those rows alone, the
	// snippets and the rest (a snippet per matching row would cost more
	// than the ranking itself).
	rank := `SELECT entry_search.rowid, ` + phraseCol + ` AS phrase, bm25(entry_search) AS score
		FROM entry_search` + join + `
		WHERE entry_search MATCH ?` + strings.Join(where, " AND ") + `
		ORDER BY phrase DESC, score, entry_search.rowid
		LIMIT ? OFFSET ?`
	// Then the page's rows in one pass of the match from the first to the
	// last of them (a query per row seeks each term's doclist from its
	// start again: 20 such queries were most of a search's time), the
	// rowid test kept out of FTS5's reach by the unary +.
	detail := func(n int) string {
		return `SELECT entry_search.rowid, e.id, e.session_id, e.seq, e.kind, e.created_at, s.harness, s.title, s.cwd,
		bridge_snippet(entry_search, e.kind, e.payload)
		FROM entry_search
		JOIN rec.entries e ON e.rowid = entry_search.rowid
		JOIN rec.sessions s ON s.id = e.session_id
		WHERE entry_search MATCH ? AND entry_search.rowid BETWEEN ? AND ?
		AND +entry_search.rowid IN (?` + strings.Repeat(", ?", n-1) + `)`
	}
	// The index first covers every entry recorded before this call.
	if err := db.catchUp(ctx, 0, nil); err != nil {
		return core.SearchPage{}, err
	}
	page := core.SearchPage{Hits: []core.SearchHit{}}
	err = func() error {
		tx, err := db.search.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return fmt.Errorf("storage: begin read: %w", err)
		}
		defer tx.Rollback() //nolint:errcheck // read-only; nothing to keep
		type ranked struct {
			rowid int64
			score float64
		}
		var top []ranked
		rows, err := tx.QueryContext(ctx, rank, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var r ranked
			var phrase int
			if err := rows.Scan(&r.rowid, &phrase, &r.score); err != nil {
				rows.Close()
				return err
			}
			top = append(top, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(top) > limit {
			top = top[:limit]
			page.NextCursor = strconv.Itoa(offset + limit)
		}
		if len(top) == 0 {
			return nil
		}
		lo, hi := top[0].rowid, top[0].rowid
		dargs := []any{match, 0, 0}
		for _, r := range top {
			lo, hi = min(lo, r.rowid), max(hi, r.rowid)
			dargs = append(dargs, r.rowid)
		}
		dargs[1], dargs[2] = lo, hi
		hits := make(map[int64]core.SearchHit, len(top))
		// The query was accepted by the ranking above: a failure from here
		// on is Bridge's, not the user's (see searchError).
		rows, err = tx.QueryContext(ctx, detail(len(top)), dargs...)
		if err != nil {
			return detailError{err}
		}
		for rows.Next() {
			var h core.SearchHit
			var rowid int64
			var kind string
			var snip sql.NullString
			var created int64
			if err := rows.Scan(&rowid, &h.EntryID, &h.SessionID, &h.Seq, &kind, &created,
				&h.Harness, &h.SessionTitle, &h.Cwd, &snip); err != nil {
				rows.Close()
				return detailError{err}
			}
			h.Kind = core.Kind(kind)
			h.CreatedAt = unix(created)
			h.Snippet, h.Highlights = splitMarks(snip.String)
			hits[rowid] = h
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return detailError{err}
		}
		for _, r := range top {
			h, ok := hits[r.rowid]
			if !ok {
				return fmt.Errorf("search: ranked row %d has no entry", r.rowid)
			}
			h.Score = r.score
			page.Hits = append(page.Hits, h)
		}
		return nil
	}()
	if err != nil {
		return core.SearchPage{}, searchError(q.Query, err)
	}
	return page, nil
}

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
	if errors.As(err, &se) && se.Code() == sqlite3.ERROR {
		msg := se.Error()
		if i := strings.LastIndex(msg, "SQL logic error: "); i >= 0 {
			msg = msg[i+len("SQL logic error: "):]
		}
		msg = strings.TrimPrefix(msg, "fts5: ")
		if strings.HasPrefix(msg, "no such column") {
			msg += " (a word followed by ':' names a column; put the word in double quotes)"
		}
		e := core.Errorf(core.CodeInvalid, "search query %q is not valid: %s", query, msg)
		e.Data = map[string]any{"field": "query"}
		return e
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
		e := core.Errorf(core.CodeInvalid, "search query is empty")
		e.Data = map[string]any{"field": "query"}
		return "", false, e
	}
	if !strings.ContainsRune(s, 0) && !usesSyntax(s) {
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

// usesSyntax reports whether s uses FTS5 query syntax.
func usesSyntax(s string) bool {
	if strings.ContainsAny(s, `"()*^:{}+`) {
		return true
	}
	for _, w := range strings.Fields(s) {
		switch w {
		case "AND", "OR", "NOT", "NEAR":
			return true
		}
		if strings.HasPrefix(w, "NEAR(") {
			return true
		}
	}
	return false
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
