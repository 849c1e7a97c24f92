package service

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/library"
	"github.com/bridge-dev/bridge/schema"
)

// The library's requests (rpc/service/library does the work): import,
// discovery, export and search, in the contract's types.

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
	page, err := s.lib.Search(ctx, q)
	if err != nil {
		return schema.SessionSearchResult{}, err
	}
	return SearchResult(page), nil
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
	content, err := s.lib.Export(ctx, p.SessionID, string(p.Format))
	if err != nil {
		return schema.SessionExportResult{}, err
	}
	return schema.SessionExportResult{Format: p.Format, Content: content}, nil
}

// SearchResult is the wire form of a page of search hits (the CLI's --json
// prints the same).
func SearchResult(page core.SearchPage) schema.SessionSearchResult { return library.SearchResult(page) }

// Search finds entries of every session by their text (session/search).
func (s *Service) Search(ctx context.Context, q core.SearchQuery) (core.SearchPage, error) {
	return s.lib.Search(ctx, q)
}

// Export renders a session: "markdown" (the default) for reading, "json"
// for a lossless copy that an import with harness "bridge" reads back.
func (s *Service) Export(ctx context.Context, sessionID, format string) (string, error) {
	return s.lib.Export(ctx, sessionID, format)
}

// Discover imports the transcripts each harness keeps in its usual places
// that are new or changed since the last discovery (harness "" means
// every harness).
func (s *Service) Discover(ctx context.Context, harness string) ([]schema.DiscoverSummary, error) {
	return s.lib.Discover(ctx, harness)
}

// SessionImport brings an existing harness transcript into the record.
// Afterwards the store's write-ahead log is truncated and the memory the
// import used goes back to the operating system (library.AfterBulk).
func (s *Service) SessionImport(ctx context.Context, p schema.SessionImportParams) (schema.SessionImportResult, error) {
	defer s.lib.AfterBulk(ctx)
	if p.Discover {
		if p.Path != "" {
			return schema.SessionImportResult{}, invalidField("path", "session/import: discover and path do not go together")
		}
		sums, err := s.lib.Discover(ctx, p.Harness)
		if err != nil {
			return schema.SessionImportResult{}, err
		}
		out := schema.SessionImportResult{Discovered: sums}
		for _, d := range sums {
			out.Entries += d.Entries
		}
		return out, nil
	}
	r, err := s.lib.Import(ctx, p.Harness, p.Path)
	if err != nil {
		return schema.SessionImportResult{}, err
	}
	return schema.SessionImportResult{SessionID: r.SessionID, Entries: r.Entries, ContextCompacted: r.ContextCompacted}, nil
}
