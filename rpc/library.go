package rpc

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// Library is the part of the backend that works across sessions: search,
// export and fork. *service.Service implements it; a backend without it
// answers these methods with an unsupported error.
type Library interface {
	Search(ctx context.Context, q core.SearchQuery) (core.SearchPage, error)
}

func init() {
	for _, m := range []*method{
		route("session/search", "", sessionSearch),
	} {
		methodTable[m.name] = m
	}
}

func library(b Backend, method string) (Library, error) {
	l, ok := b.(Library)
	if !ok {
		return nil, core.Errorf(core.CodeUnsupported, "%s: this Bridge backend does not offer it", method)
	}
	return l, nil
}

func sessionSearch(ctx context.Context, b Backend, p *schema.SessionSearchParams) (any, error) {
	if p.Limit < 0 {
		return nil, invalidParams("limit", "session/search: limit must not be negative")
	}
	if p.Limit > 200 {
		return nil, invalidParams("limit", "session/search: limit must be at most 200")
	}
	l, err := library(b, "session/search")
	if err != nil {
		return nil, err
	}
	q := core.SearchQuery{Query: p.Query, Harness: p.Harness, Cwd: p.Cwd, SessionID: p.SessionID, Cursor: p.Cursor, Limit: p.Limit}
	if p.Since != nil {
		q.Since = *p.Since
	}
	if p.Until != nil {
		q.Until = *p.Until
	}
	page, err := l.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	return SearchResult(page), nil
}

// SearchResult is the wire form of a page of search hits (the CLI's --json
// prints the same).
func SearchResult(page core.SearchPage) schema.SessionSearchResult {
	out := schema.SessionSearchResult{Hits: make([]schema.SearchHit, 0, len(page.Hits)), NextCursor: page.NextCursor}
	for _, h := range page.Hits {
		sh := schema.SearchHit{SessionID: h.SessionID, EntryID: h.EntryID, Seq: h.Seq, Kind: string(h.Kind), Harness: h.Harness,
			SessionTitle: h.SessionTitle, Cwd: h.Cwd, CreatedAt: h.CreatedAt, Snippet: h.Snippet, Score: h.Score,
			Highlights: make([]schema.TextSpan, 0, len(h.Highlights))}
		for _, m := range h.Highlights {
			sh.Highlights = append(sh.Highlights, schema.TextSpan{Start: m[0], End: m[1]})
		}
		out.Hits = append(out.Hits, sh)
	}
	return out
}
