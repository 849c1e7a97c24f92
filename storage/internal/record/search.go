package record

import (
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/bridge-dev/bridge/core"
)

// MaxIndexedText bounds the text one entry contributes to the search index
// (a tool's output can be megabytes; its first 64 KiB are searchable).
const MaxIndexedText = 64 << 10

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

// SearchKinds lists the kinds whose text is indexed, in no order.
func SearchKinds() []core.Kind {
	out := make([]core.Kind, 0, len(searchKinds))
	for k := range searchKinds {
		out = append(out, k)
	}
	return out
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
// MaxIndexedText bytes, trimmed. It returns "" for entries without
// searchable text.
func SearchText(kind core.Kind, payload []byte) string {
	if !searchKinds[kind] {
		return ""
	}
	var b strings.Builder
	(&textScanner{raw: payload, b: &b}).value(0, false)
	s := b.String()
	if len(s) > MaxIndexedText {
		s = strings.ToValidUTF8(s[:MaxIndexedText], "")
	}
	return strings.TrimSpace(s)
}

// The cost bound of one search: what a query may ask for, checked before
// anything runs. A store reads one posting list per term and merges every
// term a prefix term matches, so a query of a thousand `a*` took tens of
// seconds and all the memory SQLite had.
const (
	// MaxSearchQueryBytes bounds the text of a query.
	MaxSearchQueryBytes = 1024
	// MaxSearchTerms bounds the words (tokens) of a query.
	MaxSearchTerms = 32
	// MaxSearchPrefixTerms bounds its prefix terms (`word*`).
	MaxSearchPrefixTerms = 4
)

// QueryError is a CodeInvalid error naming the query field.
func QueryError(format string, args ...any) error {
	return core.InvalidField("query", format, args...)
}

// CheckQueryCost refuses a query over the cost bound, naming the limit.
func CheckQueryCost(q string) error {
	if len(q) > MaxSearchQueryBytes {
		return QueryError("search query is %d bytes long, over the limit of %d bytes", len(q), MaxSearchQueryBytes)
	}
	terms, prefixes := countTerms(q)
	if terms > MaxSearchTerms {
		return QueryError("search query has %d words, over the limit of %d words", terms, MaxSearchTerms)
	}
	if prefixes > MaxSearchPrefixTerms {
		return QueryError("search query has %d prefix terms (word*), over the limit of %d", prefixes, MaxSearchPrefixTerms)
	}
	return nil
}

// IsWordRune reports whether r belongs to a word (a term of the index):
// letters and digits, and any other character outside ASCII that is
// neither space nor punctuation.
func IsWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r >= 0x80 && !unicode.IsSpace(r) && !unicode.IsPunct(r)
}

// countTerms counts what a store will look up for q: its words (runs of
// word runes, what the index makes terms of, but the operators AND, OR,
// NOT and NEAR outside quotes) and its prefix terms (a `*` after a word or
// a quoted phrase).
func countTerms(q string) (terms, prefixes int) {
	inQuote, inWord := false, false
	start := 0
	for i, r := range q {
		word := IsWordRune(r)
		if word && !inWord {
			start = i
		}
		if !word && inWord {
			if inQuote || !IsOperator(q[start:i]) {
				terms++
			}
		}
		inWord = word
		switch {
		case r == '"':
			inQuote = !inQuote
		case r == '*' && !inQuote:
			prefixes++
		}
	}
	if inWord && (inQuote || !IsOperator(q[start:])) {
		terms++
	}
	return terms, prefixes
}

// IsOperator reports whether w is one of the query operators.
func IsOperator(w string) bool { return w == "AND" || w == "OR" || w == "NOT" || w == "NEAR" }

// UsesSyntax reports whether s uses query syntax (quotes, parentheses,
// prefixes, operators, FTS5's column filters and boosts); a query without
// it is plain words.
func UsesSyntax(s string) bool {
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

// CheckSearch refuses a search over the cost bound (CheckQueryCost) or
// with a time filter outside the years the record holds.
func CheckSearch(q core.SearchQuery) error {
	if err := CheckQueryCost(q.Query); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		t    time.Time
	}{{"since", q.Since}, {"until", q.Until}} {
		if !f.t.IsZero() && !core.Representable(f.t) {
			return core.InvalidField(f.name, "search: %s %s is outside the years the record holds (1678-2262)", f.name, f.t.Format(time.RFC3339))
		}
	}
	return nil
}

// SearchPaging is the page a search asks for: its size (20 by default,
// at most 200) and how many hits come before it (its cursor).
func SearchPaging(q core.SearchQuery) (limit, offset int, err error) {
	limit = q.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, 200)
	if q.Cursor != "" {
		offset, err = strconv.Atoi(q.Cursor)
		if err != nil || offset < 0 {
			return 0, 0, core.InvalidField("cursor", "cursor %q is not one a search returned (use nextCursor of the page before, with the same query and filters)", q.Cursor)
		}
	}
	return limit, offset, nil
}
