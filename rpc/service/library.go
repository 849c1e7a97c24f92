package service

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// SessionSearch is session/search: Search in the contract's types.
func (s *Service) SessionSearch(ctx context.Context, p schema.SessionSearchParams) (schema.SessionSearchResult, error) {
	if p.Limit < 0 {
		return schema.SessionSearchResult{}, invalidField("limit", "session/search: limit must not be negative")
	}
	if p.Limit > 200 {
		return schema.SessionSearchResult{}, invalidField("limit", "session/search: limit must be at most 200")
	}
	q := core.SearchQuery{Query: p.Query, Harness: p.Harness, Cwd: p.Cwd, SessionID: p.SessionID, Cursor: p.Cursor, Limit: p.Limit}
	if p.Since != nil {
		q.Since = *p.Since
	}
	if p.Until != nil {
		q.Until = *p.Until
	}
	page, err := s.Search(ctx, q)
	if err != nil {
		return schema.SessionSearchResult{}, err
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

// Search finds entries of every session by their text (session/search).
// The query is user input: one the index cannot parse is CodeInvalid.
func (s *Service) Search(ctx context.Context, q core.SearchQuery) (core.SearchPage, error) {
	se, ok := s.opts.Store.(core.Searcher)
	if !ok {
		return core.SearchPage{}, core.Errorf(core.CodeUnsupported, "this record cannot be searched")
	}
	if q.Limit < 0 {
		return core.SearchPage{}, core.Errorf(core.CodeInvalid, "search: limit must not be negative")
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return core.SearchPage{}, core.Errorf(core.CodeInvalid, "search: until must be after since")
	}
	return se.Search(ctx, q)
}

// SessionExport is session/export: Export in the contract's types.
func (s *Service) SessionExport(ctx context.Context, p schema.SessionExportParams) (schema.SessionExportResult, error) {
	switch p.Format {
	case "":
		p.Format = schema.ExportMarkdown
	case schema.ExportMarkdown, schema.ExportJSON:
	default:
		return schema.SessionExportResult{}, invalidField("format", "session/export: format %q is not \"markdown\" or \"json\"", p.Format)
	}
	content, err := s.Export(ctx, p.SessionID, string(p.Format))
	if err != nil {
		return schema.SessionExportResult{}, err
	}
	return schema.SessionExportResult{Format: p.Format, Content: content}, nil
}
