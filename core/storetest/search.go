package storetest

import (
	"sort"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

// RunSearch runs the search part of the suite: the query forms the API
// documents (plain words, a quoted phrase, OR, NOT, a prefix, AND and
// parentheses), case and diacritics, words with punctuation in them,
// ranking an exact phrase first, filters, paging, snippets and the
// refusal of queries that do not parse. Every store that implements
// core.Searcher must give the same hits for them; open's store must
// implement it.
func RunSearch(t *testing.T, open Open) {
	f := newSearchFixture(t, open)
	t.Run("forms", f.forms)
	t.Run("phrase-ranks-first", func(t *testing.T) {
		p := f.run(t, core.SearchQuery{Query: "quick brown"})
		if got := f.names(p); got != "d1,d2" {
			t.Fatalf("hits %q, want d1 (the exact phrase) before d2", got)
		}
	})
	t.Run("snippet", f.snippet)
	t.Run("filters-and-pages", f.filtersAndPages)
	t.Run("invalid", f.invalid)
}

// searchFixture is RunSearch's record: six short texts in two sessions
// (d6 alone in b), and the searcher of the store that holds them.
type searchFixture struct {
	se      core.Searcher
	a, b    core.Session
	byEntry map[string]string // entry id: text name
}

func newSearchFixture(t *testing.T, open Open) *searchFixture {
	st := open(t)
	t.Cleanup(func() { _ = st.Close() })
	se, ok := st.(core.Searcher)
	if !ok {
		t.Fatalf("%T does not implement core.Searcher", st)
	}
	f := &searchFixture{se: se, byEntry: map[string]string{}}
	var err error
	if f.a, err = st.CreateSession(ctx, core.Session{Harness: "codex", Cwd: "/repo/a"}); err != nil {
		t.Fatal(err)
	}
	if f.b, err = st.CreateSession(ctx, core.Session{Harness: "opencode", Cwd: "/repo/b"}); err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{ // name: text
		"d1": "the quick brown fox jumps",
		"d2": "brown quick fox",
		"d3": "lazy dog sleeps in the sun",
		"d4": "the Crème brûlée recipe",
		"d5": "edit main.go and don't-panic",
		"d6": "quickly running foxes",
	}
	for _, name := range []string{"d1", "d2", "d3", "d4", "d5", "d6"} {
		sid := f.a.ID
		if name == "d6" {
			sid = f.b.ID
		}
		es := MustAppend(t, st, sid, assistant(docs[name]))
		f.byEntry[es[0].ID] = name
	}
	return f
}

// names lists the texts of a page's hits, in order.
func (f *searchFixture) names(p core.SearchPage) string {
	var out []string
	for _, h := range p.Hits {
		out = append(out, f.byEntry[h.EntryID])
	}
	return strings.Join(out, ",")
}

// sorted sorts a list names made.
func sorted(s string) string {
	parts := strings.Split(s, ",")
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (f *searchFixture) run(t *testing.T, q core.SearchQuery) core.SearchPage {
	t.Helper()
	p, err := f.se.Search(ctx, q)
	if err != nil {
		t.Fatalf("Search(%q): %v", q.Query, err)
	}
	return p
}

func (f *searchFixture) forms(t *testing.T) {
	for _, c := range []struct{ query, want string }{
		{"quick fox", "d1,d2"},             // every word, anywhere
		{`"brown fox"`, "d1"},              // the words one after the other
		{"lazy OR recipe", "d3,d4"},        // either
		{"brown NOT jumps", "d2"},          // without
		{"quick*", "d1,d2,d6"},             // a prefix
		{`"quick bro"*`, "d1"},             // a phrase ending in a prefix
		{"fox AND brown", "d1,d2"},         // both
		{"(lazy OR recipe) AND sun", "d3"}, // grouping
		{"CREME", "d4"},                    // case and diacritics do not matter
		{"brûlée", "d4"},
		{"main.go", "d5"}, // words with punctuation need no quoting
		{"don't-panic", "d5"},
		{"nothing-like-it", ""},
	} {
		if got := sorted(f.names(f.run(t, core.SearchQuery{Query: c.query}))); got != c.want {
			t.Errorf("%q: hits %q, want %q", c.query, got, c.want)
		}
	}
}

func (f *searchFixture) snippet(t *testing.T) {
	p := f.run(t, core.SearchQuery{Query: "CREME"})
	if len(p.Hits) != 1 {
		t.Fatalf("%d hits", len(p.Hits))
	}
	h := p.Hits[0]
	r := []rune(h.Snippet)
	if len(h.Highlights) != 1 || string(r[h.Highlights[0][0]:h.Highlights[0][1]]) != "Crème" {
		t.Fatalf("snippet %q highlights %v, want Crème marked", h.Snippet, h.Highlights)
	}
	if h.SessionID != f.a.ID || h.Harness != "codex" || h.Cwd != "/repo/a" || h.Kind != core.KindAssistantMessage || h.Seq != 4 || h.CreatedAt.IsZero() {
		t.Fatalf("hit %+v", h)
	}
}

func (f *searchFixture) filtersAndPages(t *testing.T) {
	if got := f.names(f.run(t, core.SearchQuery{Query: "quick*", Harness: "opencode"})); got != "d6" {
		t.Errorf("harness filter: %q", got)
	}
	if got := sorted(f.names(f.run(t, core.SearchQuery{Query: "quick*", SessionID: f.a.ID}))); got != "d1,d2" {
		t.Errorf("session filter: %q", got)
	}
	if got := f.names(f.run(t, core.SearchQuery{Query: "quick*", Cwd: "/repo/b"})); got != "d6" {
		t.Errorf("cwd filter: %q", got)
	}
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		p := f.run(t, core.SearchQuery{Query: "quick*", Limit: 2, Cursor: cursor})
		all = append(all, f.names(p))
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	if got := sorted(strings.Join(all, ",")); got != "d1,d2,d6" {
		t.Errorf("pages of 2: %q", got)
	}
}

func (f *searchFixture) invalid(t *testing.T) {
	se := f.se
	for _, q := range []string{`"unbalanced`, `alpha AND`, `(alpha`, `nosuchcolumn: alpha`, `   `, `*`} {
		_, err := se.Search(ctx, core.SearchQuery{Query: q})
		if core.ErrorCode(err) != core.CodeInvalid {
			t.Errorf("%q: %v (%s), want invalid", q, err, core.ErrorCode(err))
		}
	}
	if _, err := se.Search(ctx, core.SearchQuery{Query: "quick", Cursor: "x"}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("bad cursor: %v", err)
	}
	long := strings.Repeat("w ", 40)
	if _, err := se.Search(ctx, core.SearchQuery{Query: long}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("40 words: %v, want invalid (over the cost bound)", err)
	}
	if _, err := se.Search(ctx, core.SearchQuery{Query: "a* b* c* d* e*"}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("5 prefixes: %v, want invalid", err)
	}
}
