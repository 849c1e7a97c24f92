package core

import "context"

// Store is where the record lives. Implementations must be safe for use by
// several goroutines and several processes on the same data directory.
//
// Errors: a missing session or entry wraps ErrNotFound (CodeNotFound); an
// invalid entry is CodeInvalid; a parent from another session, a parent that
// does not exist or a head that would create a cycle is CodeInvalid; anything
// the database reports is wrapped with %w.
type Store interface {
	Writer
	PreviewStore
	AttachmentStore
	WindowReader

	// GetSession returns the head record of session id.
	GetSession(ctx context.Context, id string) (Session, error)
	// ListSessions pages sessions by most recent update; cursor "" starts at
	// the top; the returned cursor is "" on the last page.
	ListSessions(ctx context.Context, q ListQuery) ([]Session, string, error)
	// FindSessionByNative returns the session recorded for a harness's own
	// session id, or ErrNotFound.
	FindSessionByNative(ctx context.Context, harness, nativeID string) (Session, error)
	// GetEntry returns one entry.
	GetEntry(ctx context.Context, id string) (Entry, error)
	// ActiveBranch returns the entries from the root to the head, in order.
	// A cycle, an orphan parent, a parent from another session or a missing
	// head is a CodeCorrupt error naming the problem.
	ActiveBranch(ctx context.Context, sessionID string) ([]Entry, error)
	// History pages the active branch backwards: the entries with
	// seq < beforeSeq (0 means from the head), newest last, stopping once
	// maxMessages user/assistant messages have been collected. hasMore tells
	// whether older entries remain on the branch.
	History(ctx context.Context, sessionID string, beforeSeq int64, maxMessages int) (entries []Entry, hasMore bool, err error)
	// HistoryAfter pages the active branch forwards: the entries with
	// seq > afterSeq, oldest first, stopping once maxMessages
	// user/assistant messages have been collected. hasNewer tells whether
	// newer entries remain on the branch (the page does not end at the
	// head). A page costs about what a History page costs, wherever it
	// starts.
	HistoryAfter(ctx context.Context, sessionID string, afterSeq int64, maxMessages int) (entries []Entry, hasNewer bool, err error)
	// HistoryAround reads the page of the active branch around entry
	// entryID in one read: the History page of about maxMessages/2
	// messages ending at the entry, then the HistoryAfter page of the rest
	// after it. An unknown entry is ErrNotFound; an entry of another
	// session, or one not on the active branch, is CodeInvalid.
	HistoryAround(ctx context.Context, sessionID, entryID string, maxMessages int) (entries []Entry, hasMore, hasNewer bool, err error)
	// Audit returns audit records, oldest first, optionally filtered by
	// entity (a session id) and kind; empty filters match all.
	Audit(ctx context.Context, entity, kind string) ([]AuditRecord, error)
	// Integrity checks every session and reports those that are unsound
	// without failing the others.
	Integrity(ctx context.Context) (IntegrityReport, error)
	// Update runs fn in one transaction: everything fn writes commits
	// together or not at all.
	Update(ctx context.Context, fn func(w Writer) error) error
	// SchemaVersion is the version of the applied migrations.
	SchemaVersion(ctx context.Context) (int, error)
	// Close releases the database.
	Close() error
}

// Writer is the set of writes that can be grouped in one transaction.
type Writer interface {
	// CreateSession inserts a session; ID, CreatedAt and UpdatedAt are
	// filled when empty. It returns the stored session.
	CreateSession(ctx context.Context, s Session) (Session, error)
	// PatchSession changes head fields.
	PatchSession(ctx context.Context, id string, p SessionPatch) (Session, error)
	// Append adds entries as a chain under the session's head and moves the
	// head to the last one. An entry whose NativeID already exists in the
	// session is skipped (not an error) and is absent from the result.
	Append(ctx context.Context, sessionID string, entries ...NewEntry) ([]Entry, error)
	// AppendTo adds entries as a chain under parentID (starting a branch when
	// parentID is not the head) and moves the head to the last one.
	AppendTo(ctx context.Context, sessionID, parentID string, entries ...NewEntry) ([]Entry, error)
	// MoveHead switches the active branch to the one ending at entryID.
	MoveHead(ctx context.Context, sessionID, entryID string) error
	// AppendAudit adds an audit record; Time is filled when zero.
	AppendAudit(ctx context.Context, r AuditRecord) error
}

// ListQuery selects a page of sessions.
type ListQuery struct {
	Cursor          string
	Limit           int // 0 means 100
	IncludeArchived bool
	Harness         string
}
