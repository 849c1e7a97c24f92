// Package library is the record as a library of sessions: importing a
// harness's transcripts (one file, or every file discovery finds), exporting
// a session (Markdown to read, JSON to restore), searching every session's
// text, and forking a session (session/fork: a new session that starts from
// a projection of another, fork.go). It reads and writes through core.Store
// and reads transcripts through the adapters' core.Importer; it keeps no
// live session of its own and drives a fork's through its own small
// Sessions interface.
package library

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/attach"
	"github.com/bridge-dev/bridge/schema"
)

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

// Hosts finds the adapters whose transcripts the library reads.
type Hosts interface {
	// Names lists the configured harnesses, sorted.
	Names() []string
	// Get returns a harness's adapter, or an unavailable error.
	Get(harness string) (core.BridgeHost, error)
}

// Options configures a Library. Store and Hosts are required.
type Options struct {
	Store core.Store
	Hosts Hosts
	// IDs makes the ids of imported sessions.
	IDs *core.IDs
	// Prices price imported usage that carries no cost (core.PriceUsage).
	Prices map[string]core.Price
	// Images keeps and reads a session's images (exports carry them).
	Images attach.Images
	// Sessions and Projector are what a fork starts from and runs in
	// (session/fork); the library keeps no live session of its own.
	Sessions  Sessions
	Projector Projector
}

// Library imports, exports and searches sessions. It is safe for
// concurrent use.
type Library struct {
	opts Options
}

// New returns a Library over opts.
func New(opts Options) *Library { return &Library{opts: opts} }

// Outcome is the result of an import.
type Outcome struct {
	SessionID        string
	Entries          int // entries added by this import
	ContextCompacted int // context.compacted entries in the imported session
}

// Search finds entries of every session by their text (session/search).
// The query is user input: one the index cannot parse is CodeInvalid.
func (s *Library) Search(ctx context.Context, q core.SearchQuery) (core.SearchPage, error) {
	se, ok := s.opts.Store.(core.Searcher)
	if !ok {
		return core.SearchPage{}, core.Errorf(core.CodeUnsupported, "this record cannot be searched")
	}
	if q.Limit < 0 {
		return core.SearchPage{}, core.InvalidField("limit", "limit must not be negative")
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return core.SearchPage{}, core.InvalidField("until", "until must be after since")
	}
	return se.Search(ctx, q)
}
