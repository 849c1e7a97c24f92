package schema

import (
	"encoding/json"
	"time"
)

// SessionSearchParams searches the text of every entry of every session.
type SessionSearchParams struct {
	// Query is what to look for. Plain words match entries holding all of
	// them, the exact phrase ranking first; double quotes, AND/OR/NOT, NEAR
	// and a trailing * are SQLite FTS5 query syntax. A query that does not
	// parse fails with -32602.
	Query string `json:"query"`
	// Harness limits hits to sessions of this harness.
	Harness string `json:"harness,omitempty"`
	// Cwd limits hits to sessions in this working directory.
	Cwd string `json:"cwd,omitempty"`
	// SessionID limits hits to one session.
	SessionID string `json:"sessionId,omitempty"`
	// Since limits hits to entries recorded at or after this time.
	Since *time.Time `json:"since,omitempty"`
	// Until limits hits to entries recorded before this time.
	Until *time.Time `json:"until,omitempty"`
	// Cursor continues from a previous page's nextCursor.
	Cursor string `json:"cursor,omitempty"`
	// Limit is the page size (default 20, at most 200).
	Limit int `json:"limit,omitempty" jsonschema:"minimum=0,maximum=200"`
}

// SessionSearchResult is one page of hits, best first.
type SessionSearchResult struct {
	// Hits are the matching entries, best first.
	Hits []SearchHit `json:"hits"`
	// NextCursor fetches the next page; absent on the last one.
	NextCursor string `json:"nextCursor,omitempty"`
}

// SearchHit is one entry whose text matches.
type SearchHit struct {
	// SessionID is the session holding the entry.
	SessionID string `json:"sessionId"`
	// EntryID is the matching entry.
	EntryID string `json:"entryId"`
	// Seq is the entry's sequence number in its session.
	Seq int64 `json:"seq"`
	// Kind is the entry's kind.
	Kind string `json:"kind"`
	// Harness is the session's harness.
	Harness string `json:"harness"`
	// SessionTitle is the session's title.
	SessionTitle string `json:"sessionTitle,omitempty"`
	// Cwd is the session's working directory.
	Cwd string `json:"cwd,omitempty"`
	// CreatedAt is when the entry was recorded.
	CreatedAt time.Time `json:"createdAt"`
	// Snippet is the matching part of the entry's text, as plain text.
	Snippet string `json:"snippet"`
	// Highlights mark the matched words in snippet.
	Highlights []TextSpan `json:"highlights"`
	// Score orders the hits; lower is better.
	Score float64 `json:"score"`
}

// TextSpan is a range [start, end) of a text, counted in Unicode code points.
type TextSpan struct {
	// Start is the first code point of the range.
	Start int `json:"start"`
	// End is one past the last code point of the range.
	End int `json:"end"`
}

// ExportFormat is the form session/export renders a session in.
type ExportFormat string

// Export formats.
const (
	ExportMarkdown ExportFormat = "markdown"
	ExportJSON     ExportFormat = "json"
)

// SessionExportParams renders a session for reading or for moving it.
type SessionExportParams struct {
	// SessionID is the session to export.
	SessionID string `json:"sessionId"`
	// Format is "markdown" (default: readable, tool calls folded, compaction
	// and checkpoint boundaries marked) or "json" (lossless: every entry and
	// image; `bridge import --harness bridge` reads it back).
	Format ExportFormat `json:"format,omitempty"`
}

// SessionExportResult is the rendered session.
type SessionExportResult struct {
	// Format is the format of content.
	Format ExportFormat `json:"format"`
	// Content is the Markdown text or the JSON document.
	Content string `json:"content"`
}

// SessionForkParams starts a new session from a point of an existing one.
type SessionForkParams struct {
	// SessionID is the session to fork from; it is not changed.
	SessionID string `json:"sessionId"`
	// EntryID is the last entry of the source the fork starts from (on the
	// source's active branch); absent means the head.
	EntryID string `json:"entryId,omitempty"`
	// Target names the harness, preset, model and effort of the new session;
	// empty members keep the source's.
	Target MigrationTarget `json:"target"`
	// Cwd is the new session's working directory; absent keeps the source's.
	Cwd string `json:"cwd,omitempty"`
	WorkDoneProgressParams
}

// SessionForkResult names the new session.
type SessionForkResult struct {
	// SessionID is the new session.
	SessionID string `json:"sessionId"`
	// Harness is the new session's harness.
	Harness string `json:"harness"`
	// NativeSessionID is the harness's own id of the new session.
	NativeSessionID string `json:"nativeSessionId,omitempty"`
	// Origin says where the fork came from.
	Origin ForkOrigin `json:"origin"`
	// ProjectedEntries is how many entries of the source the projection the
	// new session starts from holds.
	ProjectedEntries int `json:"projectedEntries"`
}

// ForkOrigin is the point a fork was taken from.
type ForkOrigin struct {
	// SessionID is the source session.
	SessionID string `json:"sessionId"`
	// EntryID is the source entry the fork starts after.
	EntryID string `json:"entryId"`
	// Harness is the source's harness.
	Harness string `json:"harness"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r SessionSearchResult) MarshalJSON() ([]byte, error) {
	type plain SessionSearchResult
	return json.Marshal(filled(plain(r)))
}

// MarshalJSON writes empty lists as [] rather than null.
func (r SearchHit) MarshalJSON() ([]byte, error) {
	type plain SearchHit
	return json.Marshal(filled(plain(r)))
}

// DiscoverSummary is what discovery did for one harness.
type DiscoverSummary struct {
	// Harness is the harness whose transcripts were looked at.
	Harness string `json:"harness"`
	// Roots are the folders searched.
	Roots []string `json:"roots"`
	// Files is the number of transcripts found.
	Files int `json:"files"`
	// Imported is the number of transcripts that added entries.
	Imported int `json:"imported"`
	// Unchanged is the number of transcripts skipped because they did not
	// change since the last discovery.
	Unchanged int `json:"unchanged"`
	// Entries is the number of entries added.
	Entries int `json:"entries"`
	// Failed lists transcripts that could not be imported, with why.
	Failed []DiscoverFailure `json:"failed,omitempty"`
}

// DiscoverFailure is one transcript discovery could not import.
type DiscoverFailure struct {
	// Path is the transcript.
	Path string `json:"path"`
	// Error says why.
	Error string `json:"error"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r DiscoverSummary) MarshalJSON() ([]byte, error) {
	type plain DiscoverSummary
	return json.Marshal(filled(plain(r)))
}
