package storage

import (
	"errors"
	"sort"
	"strings"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/bridge-dev/bridge/core"
)

// snippetTokens is how many tokens of an entry's text a snippet shows.
const snippetTokens = 24

var errEnoughTokens = errors.New("enough tokens")

// snippetFunc is bridge_snippet(entry_search, kind, payload): the part of
// the entry's searchable text around the best cluster of matches, each
// match between markOpen and markClose, with "…" where text was cut.
//
// The index stores no text (it is contentless, so the text is not kept
// twice), so FTS5's own snippet() has nothing to cut from: the text is
// made again from the entry's payload (SearchText is what was indexed) and
// split by the index's own tokenizer, and the match positions come from
// the index. Only the tokens up to the end of the chosen window are
// tokenized.
func snippetFunc(fts fts5.Context, ctx sqlite3.Context, arg ...sqlite3.Value) {
	if len(arg) != 2 {
		ctx.ResultError(errors.New("bridge_snippet: want the table, the entry's kind and its payload"))
		return
	}
	text := SearchText(core.Kind(arg[0].Text()), arg[1].RawText())
	if text == "" {
		ctx.ResultNull()
		return
	}
	spans, err := matchSpans(fts)
	if err != nil {
		ctx.ResultError(err)
		return
	}
	total, err := fts.ColumnSize(0)
	if err != nil {
		ctx.ResultError(err)
		return
	}
	start := bestWindow(spans, total)
	end := start + snippetTokens
	toks := make([]tokenBytes, 0, snippetTokens)
	i, enough := 0, false
	err = fts.Tokenize(text, "", func(_ fts5.TokenFlag, _ string, from, to int) error {
		if i >= start {
			toks = append(toks, tokenBytes{from, to})
		}
		i++
		if i >= end {
			// Stop here (SQLite hands back a generic error for it).
			enough = true
			return errEnoughTokens
		}
		return nil
	})
	if err != nil && !enough {
		ctx.ResultError(err)
		return
	}
	if len(toks) == 0 {
		ctx.ResultNull()
		return
	}
	ctx.ResultText(markSnippet(text, toks, spans, start, total))
}

// matchSpan is a match of phrase in the entry's text: tokens [from, to).
type matchSpan struct{ phrase, from, to int }

// tokenBytes is a token's bytes [from, to) in the text.
type tokenBytes struct{ from, to int }

// matchSpans lists the current row's matches in its text column, in the
// order of their first token.
func matchSpans(fts fts5.Context) ([]matchSpan, error) {
	n, err := fts.InstCount()
	if err != nil {
		return nil, err
	}
	spans := make([]matchSpan, 0, n)
	for i := 0; i < n; i++ {
		phrase, col, off, err := fts.Inst(i)
		if err != nil {
			return nil, err
		}
		if col == 0 {
			spans = append(spans, matchSpan{phrase, off, off + max(1, fts.PhraseSize(phrase))})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	return spans, nil
}

// bestWindow is the first token of the snippet's window in a text of total
// tokens: the window holding the most different phrases, then the most
// matches; it starts a few tokens before its first match.
func bestWindow(spans []matchSpan, total int) int {
	start, best := 0, -1
	for _, s := range spans {
		c := max(0, min(s.from-4, total-snippetTokens))
		seen := map[int]bool{}
		hits := 0
		for _, t := range spans {
			if t.from >= c && t.to <= c+snippetTokens {
				seen[t.phrase] = true
				hits++
			}
		}
		if score := len(seen)*1000 + hits; score > best {
			start, best = c, score
		}
	}
	return start
}

// markSnippet writes the window's tokens toks (from token start of total)
// of text, runs of matched tokens marked as one span, with an ellipsis
// where the text goes on.
func markSnippet(text string, toks []tokenBytes, spans []matchSpan, start, total int) string {
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	hit := func(idx int) bool {
		for _, s := range spans {
			if idx >= s.from && idx < s.to {
				return true
			}
		}
		return false
	}
	pos := toks[0].from
	open := false
	for k, t := range toks {
		h := hit(start + k)
		if open && !h {
			b.WriteString(markClose)
			open = false
		}
		b.WriteString(text[pos:t.from])
		if h && !open {
			b.WriteString(markOpen)
			open = true
		}
		b.WriteString(text[t.from:t.to])
		pos = t.to
	}
	if open {
		b.WriteString(markClose)
	}
	if start+len(toks) < total {
		b.WriteString("…")
	} else {
		b.WriteString(text[pos:])
	}
	return b.String()
}
