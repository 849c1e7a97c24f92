package core

import (
	"context"
	"time"
)

// SearchQuery asks for entries whose text matches Query, best first.
//
// Query is user input. Plain words (no double quotes, parentheses, '*',
// '^', ':' or upper-case AND/OR/NOT/NEAR) match entries holding every word,
// and entries holding the words as one exact phrase rank above those
// holding them apart. Anything else is read as an SQLite FTS5 query; one
// that does not parse fails with CodeInvalid.
type SearchQuery struct {
	Query     string
	Harness   string    // only sessions of this harness
	Cwd       string    // only sessions in this working directory
	SessionID string    // only this session
	Since     time.Time // only entries recorded at or after Since
	Until     time.Time // only entries recorded before Until
	Cursor    string    // "" starts at the best hit; a page's NextCursor goes on
	Limit     int       // 0 means 20; at most 200
}

// HandoffWorkerTitle begins the title of the temporary session a
// migration's summary worker runs in ("handoff worker for s_…"): a search
// leaves those sessions out, once archived, unless it names one.
const HandoffWorkerTitle = "handoff worker for "

// SearchHit is one matching entry.
type SearchHit struct {
	SessionID    string
	EntryID      string
	Seq          int64
	Kind         Kind
	Harness      string
	SessionTitle string
	Cwd          string
	CreatedAt    time.Time
	// Snippet is the matching part of the entry's text. Highlights marks the
	// matched words in it as [start, end) offsets counted in Unicode code
	// points.
	Snippet    string
	Highlights [][2]int
	// Score orders hits: lower is better (SQLite FTS5 bm25, with exact
	// phrase matches placed first).
	Score float64
}

// SearchPage is one page of hits.
type SearchPage struct {
	Hits       []SearchHit
	NextCursor string // "" on the last page
}

// Searcher finds entries by their text. A Store may implement it.
type Searcher interface {
	Search(ctx context.Context, q SearchQuery) (SearchPage, error)
}

// SessionDump is the whole record of one session: its head, every entry of
// its tree (in sequence order) and the audit records about it.
type SessionDump struct {
	Session Session       `json:"session"`
	Entries []Entry       `json:"entries"`
	Audit   []AuditRecord `json:"audit"`
}

// Dumper reads a session's whole record and writes one back verbatim (ids,
// parents, sequence numbers and times kept). A Store may implement it.
type Dumper interface {
	Dump(ctx context.Context, sessionID string) (SessionDump, error)
	// DumpStream is Dump handing the record over one part at a time, from
	// one snapshot, so that a large session is never held in memory whole:
	// the session's head to head, then every entry (in sequence order)
	// and audit record to to. An error of head or to stops it and is
	// returned as it is.
	DumpStream(ctx context.Context, sessionID string, head func(Session) error, to Restorer) error
	// Restore writes d. A session that already exists gets only the entries
	// it lacks (an entry id known in another session is a conflict); its
	// head fields become d's when entries were added. It returns how many
	// entries were added.
	Restore(ctx context.Context, d SessionDump) (int, error)
	// RestoreStream is Restore with the entries (in sequence order) and
	// audit records handed over one at a time by fill, so that a large
	// session need not be held in memory; everything fill hands over is
	// written in one transaction, or nothing is when fill or a check fails.
	RestoreStream(ctx context.Context, s Session, fill func(r Restorer) error) (int, error)
}

// Restorer receives the parts of a session being restored (Dumper).
type Restorer interface {
	Entry(e Entry) error
	Audit(a AuditRecord) error
}
