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
	Limit int `json:"limit,omitempty"`
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
