package schema

import (
	"encoding/json"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// Content is one block of a prompt, tagged by type: text or image. In Go it
// is one flat struct; the schema is the oneOf of TextContent and
// ImageContent.
type Content = core.Content

// Content types.
const (
	ContentText  = "text"
	ContentImage = "image"
)

// TextContent is a text block of a prompt.
type TextContent struct {
	// Type is always "text".
	Type string `json:"type" jsonschema_extras:"const=text"`
	// Text is the text.
	Text string `json:"text"`
}

// ImageContent is an image block of a prompt.
type ImageContent struct {
	// Type is always "image".
	Type string `json:"type" jsonschema_extras:"const=image"`
	// MediaType is the image's MIME type ("image/png"…).
	MediaType string `json:"mediaType"`
	// Data is the image, base64-encoded.
	Data string `json:"data" jsonschema_extras:"contentEncoding=base64"`
}

// Entry is one immutable node of a session's record.
type Entry struct {
	// ID is the entry's id.
	ID string `json:"id"`
	// SessionID is the session the entry belongs to.
	SessionID string `json:"sessionId"`
	// ParentID is the previous entry on its branch (absent for the root).
	ParentID string `json:"parentId,omitempty"`
	// Seq is the entry's sequence number in its session, increasing.
	Seq int64 `json:"seq"`
	// Kind is the entry kind ("user.message", "context.compacted"…); kinds
	// unknown to the client are shown, not dropped.
	Kind string `json:"kind"`
	// Payload is the kind's JSON object.
	Payload json.RawMessage `json:"payload" jsonschema:"type=object" jsonschema_extras:"additionalProperties=true"`
	// NativeID is the harness's own id for the event, when it has one.
	NativeID string `json:"nativeId,omitempty"`
	// TokenEstimate is Bridge's estimate of the entry's size in tokens.
	TokenEstimate int64 `json:"tokenEstimate,omitempty"`
	// CreatedAt is when Bridge recorded the entry.
	CreatedAt time.Time `json:"createdAt"`
}

// MarshalJSON writes an absent payload as {} rather than null.
func (e Entry) MarshalJSON() ([]byte, error) {
	type plain Entry
	return json.Marshal(filled(plain(e)))
}

// SessionListParams pages the sessions Bridge knows.
type SessionListParams struct {
	// Cursor is the nextCursor of the previous page.
	Cursor string `json:"cursor,omitempty"`
	// Limit is the most items to return.
	Limit int `json:"limit,omitempty" jsonschema:"minimum=0"`
	// Harness keeps only sessions of this harness.
	Harness string `json:"harness,omitempty"`
	// IncludeArchived lists archived sessions too.
	IncludeArchived bool `json:"includeArchived,omitempty"`
}

// SessionListResult is one page of sessions, most recently updated first.
type SessionListResult struct {
	// Items are the sessions.
	Items []SessionListItem `json:"items"`
	// NextCursor fetches the next page; absent on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r SessionListResult) MarshalJSON() ([]byte, error) {
	type plain SessionListResult
	return json.Marshal(filled(plain(r)))
}

// SessionListItem is one session in a list.
type SessionListItem struct {
	// SessionID is Bridge's id of the session.
	SessionID string `json:"sessionId"`
	// Harness is the harness that runs it.
	Harness string `json:"harness"`
	// Title is the session's title.
	Title string `json:"title,omitempty"`
	// Cwd is the working directory.
	Cwd string `json:"cwd,omitempty"`
	// Archived is true once archived.
	Archived bool `json:"archived"`
	// UpdatedAt is when the record last changed.
	UpdatedAt time.Time `json:"updatedAt"`
	// CreatedAt is when the session was created.
	CreatedAt time.Time `json:"createdAt,omitzero"`
	// Preset is the preset the session is locked to.
	Preset string `json:"preset,omitempty"`
	// Model is the current model.
	Model string `json:"model,omitempty"`
	// NativeSessionID is the harness's own session or thread id.
	NativeSessionID string `json:"nativeSessionId,omitempty"`
	// RestoreMode is how the session last came back; absent when it never
	// was resumed.
	RestoreMode RestoreMode `json:"restoreMode,omitempty"`
	// Status is where the session stands: live, suspended, ended or idle.
	Status SessionStatus `json:"status"`
	// Branch is the branch of the session's own worktree, when it has one.
	Branch string `json:"branch,omitempty"`
	// Worktree is the session's own worktree (absent once removed).
	Worktree string `json:"worktree,omitempty"`
}

// SessionCreateParams starts a session.
type SessionCreateParams struct {
	// Harness is "claude-code", "codex", "opencode", "acp", "dsh", "fake" or
	// another adapter's name (bridge/doctor lists them).
	Harness string `json:"harness"`
	// Cwd is the working directory.
	Cwd string `json:"cwd"`
	// Preset names the tool-and-prompt assembly to lock the session to.
	Preset string `json:"preset,omitempty"`
	// Model is the model to start with.
	Model string `json:"model,omitempty"`
	// Effort is the reasoning effort to start with.
	Effort string `json:"effort,omitempty"`
	// Title is the session's title.
	Title string `json:"title,omitempty"`
	// Worktree runs the session in a git worktree of its own, made from
	// the cwd's repository on a new branch named for the session (a cwd in
	// no repository is refused). A preset's worktree key does the same.
	Worktree bool `json:"worktree,omitempty"`
}

// SessionCreateResult names the new session.
type SessionCreateResult struct {
	// SessionID is Bridge's id of the session.
	SessionID string `json:"sessionId"`
	// Harness is the harness that runs it.
	Harness string `json:"harness"`
	// NativeSessionID is the harness's own id, when already known.
	NativeSessionID string `json:"nativeSessionId,omitempty"`
	// Repo is the session's git repository, when it started in one.
	Repo *SessionRepo `json:"repo,omitempty"`
}

// SessionRepo is a session's git repository as Bridge recorded it when the
// session started.
type SessionRepo struct {
	// Root is the repository's top level.
	Root string `json:"root"`
	// BaseCommit is the commit the session started from: session/diff
	// compares against it.
	BaseCommit string `json:"baseCommit"`
	// Worktree is the session's own worktree; absent when the session
	// works in the shared cwd.
	Worktree string `json:"worktree,omitempty"`
	// Branch is the worktree's branch.
	Branch string `json:"branch,omitempty"`
	// Removed is true once the worktree was removed (archived); the
	// branch stays.
	Removed bool `json:"removed,omitempty"`
	// SourceDirty is true when the cwd had uncommitted changes as the
	// worktree was made: the worktree starts from the commit without them.
	SourceDirty bool `json:"sourceDirty,omitempty"`
}

// SessionPromptParams runs one turn; entries stream as session/update
// meanwhile.
type SessionPromptParams struct {
	// SessionID is the session to prompt.
	SessionID string `json:"sessionId"`
	// Content is the prompt, in order.
	Content []Content `json:"content" jsonschema:"minItems=1"`
	WorkDoneProgressParams
	// Steer delivers the prompt into the turn that is running, where the
	// harness can take input mid-turn (bridge/doctor: prompt.steer); it is
	// answered at once with stopReason "steered". Refused (unavailable)
	// when the harness cannot; with no turn running it runs as usual.
	// Without it, a prompt sent while a turn runs waits in the session's
	// queue and runs when the turns before it end.
	Steer bool `json:"steer,omitempty"`
	// PromptID names the prompt while it waits in the queue (session/queue
	// lists it, session/withdraw takes it back); Bridge makes one when it
	// is absent.
	PromptID string `json:"promptId,omitempty" jsonschema:"maxLength=128"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (p SessionPromptParams) MarshalJSON() ([]byte, error) {
	type plain SessionPromptParams
	return json.Marshal(filled(plain(p)))
}

// SessionPromptResult is how the turn ended.
type SessionPromptResult struct {
	// StopReason is end_turn, cancelled, error, max_tokens or the harness's
	// own reason; "steered" for a prompt delivered into the running turn,
	// "withdrawn" for a queued prompt taken back before it ran.
	StopReason string `json:"stopReason"`
	// PromptID names the prompt (the client's promptId or Bridge's own).
	PromptID string `json:"promptId,omitempty"`
	// Queued is true when the prompt waited in the queue before it ran
	// (or was withdrawn).
	Queued bool `json:"queued,omitempty"`
}

// SessionCancelParams interrupts the running turn.
type SessionCancelParams struct {
	// SessionID is the session to interrupt.
	SessionID string `json:"sessionId"`
	// ClearQueue withdraws every queued prompt too (each is answered with
	// stopReason "withdrawn"); without it the queue stays and its first
	// prompt runs once the cancelled turn has ended.
	ClearQueue bool `json:"clearQueue,omitempty"`
}

// SessionCancelResult acknowledges session/cancel.
type SessionCancelResult struct{}

// SessionRenameParams renames a session.
type SessionRenameParams struct {
	// SessionID is the session to rename.
	SessionID string `json:"sessionId"`
	// Title is the new title.
	Title string `json:"title"`
}

// SessionRenameResult acknowledges session/rename.
type SessionRenameResult struct{}

// SessionArchiveParams archives a session; its record stays.
type SessionArchiveParams struct {
	// SessionID is the session to archive.
	SessionID string `json:"sessionId"`
}

// SessionArchiveResult acknowledges session/archive.
type SessionArchiveResult struct{}

// SessionHistoryParams pages the record along the active branch: backwards
// from the head or from beforeSeq, forwards from afterSeq, or around an
// entry (at most one of beforeSeq, afterSeq and around).
type SessionHistoryParams struct {
	// SessionID is the session to read.
	SessionID string `json:"sessionId"`
	// BeforeSeq returns only entries with a smaller seq; absent means from
	// the head.
	BeforeSeq *int64 `json:"beforeSeq,omitempty" jsonschema:"minimum=1"`
	// MaxMessages bounds the page by user and assistant messages (other
	// entries do not count).
	MaxMessages int `json:"maxMessages,omitempty" jsonschema:"minimum=0"`
	// AfterSeq pages forwards: only entries with a larger seq, oldest
	// first, towards the head (0 means from the root). The result carries
	// hasNewer.
	AfterSeq *int64 `json:"afterSeq,omitempty" jsonschema:"minimum=0"`
	// Around reads the page around this entry of the session: about half
	// of maxMessages up to and including it, the rest after it. The entry
	// must be on the active branch. The result carries hasMore and
	// hasNewer.
	Around string `json:"around,omitempty"`
}

// SessionHistoryResult is one page of the record, oldest first.
type SessionHistoryResult struct {
	// Entries are the page's entries, oldest first.
	Entries []Entry `json:"entries"`
	// HasMore is true when older entries remain before the first entry
	// (on an empty page read with afterSeq: false).
	HasMore bool `json:"hasMore"`
	// HasNewer is present on pages read with afterSeq or around: true when
	// newer entries remain on the active branch after the last entry (the
	// page does not end at the head).
	HasNewer *bool `json:"hasNewer,omitempty"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r SessionHistoryResult) MarshalJSON() ([]byte, error) {
	type plain SessionHistoryResult
	return json.Marshal(filled(plain(r)))
}

// SessionResumeParams brings a session back.
type SessionResumeParams struct {
	// SessionID is the session to resume.
	SessionID string `json:"sessionId"`
	// Mode "fresh" starts over deliberately; absent means the best mode
	// available (hot, then native, then checkpoint_restored).
	Mode ResumeRequestMode `json:"mode,omitempty"`
}

// SessionResumeResult says honestly how the session came back.
type SessionResumeResult struct {
	// SessionID is the session that came back (as in session/restored).
	SessionID string `json:"sessionId,omitempty"`
	// Mode is how the session came back.
	Mode RestoreMode `json:"mode"`
	// Reason says why this mode (why fresh, why not native…).
	Reason string `json:"reason,omitempty"`
	// NativeError is the harness's own error text of a failed native resume.
	NativeError string `json:"nativeError,omitempty"`
	// CheckpointEntryID is the checkpoint injected (checkpoint_restored).
	CheckpointEntryID string `json:"checkpointEntryId,omitempty"`
}

// SessionCompactParams asks for a compaction of the harness's window.
type SessionCompactParams struct {
	// SessionID is the session to compact.
	SessionID string `json:"sessionId"`
	// Focus tells the summariser what to keep.
	Focus string `json:"focus,omitempty"`
	WorkDoneProgressParams
}

// SessionCompactResult says who compacted and what became of the focus.
type SessionCompactResult struct {
	// By is "harness" (its compaction command ran) or "bridge" (a Bridge
	// checkpoint was written instead).
	By CompactedBy `json:"by"`
	// FocusApplied is false when a focus was given and could not be passed.
	FocusApplied bool `json:"focusApplied"`
	// FocusNote says why the focus was not applied.
	FocusNote string `json:"focusNote,omitempty"`
	// EntryID is the checkpoint entry (by bridge) or the context.compacted
	// entry when already recorded (by harness).
	EntryID string `json:"entryId,omitempty"`
}

// SessionCheckpointParams writes a Bridge checkpoint now.
type SessionCheckpointParams struct {
	// SessionID is the session to checkpoint.
	SessionID string `json:"sessionId"`
	// Reason defaults to manual.
	Reason CheckpointReason `json:"reason,omitempty"`
	WorkDoneProgressParams
}

// SessionCheckpointResult names the committed checkpoint.
type SessionCheckpointResult struct {
	// EntryID is the checkpoint entry.
	EntryID string `json:"entryId"`
	// Provenance says where its content came from.
	Provenance Provenance `json:"provenance"`
	// Reason is why it was written.
	Reason CheckpointReason `json:"reason"`
	// Method is how it was obtained.
	Method CheckpointMethod `json:"method"`
	// ForkUsage is what the fork's turns cost (method fork), where the
	// harness reports it.
	ForkUsage *TokenUsage `json:"forkUsage,omitempty"`
}

// SessionSuspendParams asks Bridge to suspend a live session (an editor
// closing its tab): a before_suspend checkpoint when the decision allows,
// then its harness process is stopped. The next session/prompt or
// session/resume brings it back, natively where the harness can.
type SessionSuspendParams struct {
	// SessionID is the session to suspend.
	SessionID string `json:"sessionId"`
}

// SessionSuspendResult says what the suspension did.
type SessionSuspendResult struct {
	// Suspended is true when a running harness process was stopped; false
	// when none was running (nothing changed).
	Suspended bool `json:"suspended"`
	// CheckpointEntryID is the before_suspend checkpoint, when one was
	// written.
	CheckpointEntryID string `json:"checkpointEntryId,omitempty"`
	// Suppressed names the rule that stopped the checkpoint (no_new_work,
	// worker_done, direct_chat), when one did.
	Suppressed CheckpointSuppression `json:"suppressed,omitempty"`
}

// SessionImportParams brings an existing harness transcript into the
// record. Importing the same file twice adds nothing. With discover, Bridge
// finds the transcripts each installed harness keeps in its usual places
// and imports what is new or grown since the last discovery.
type SessionImportParams struct {
	// Harness is the harness that wrote the transcript ("bridge" for a
	// `session/export` JSON document). With discover it limits discovery to
	// this harness.
	Harness string `json:"harness,omitempty"`
	// Path is the transcript file; required unless discover is set.
	Path string `json:"path,omitempty"`
	// Discover searches every harness's usual transcript folders instead of
	// importing one file.
	Discover bool `json:"discover,omitempty"`
	WorkDoneProgressParams
}

// SessionImportResult counts what the import did.
type SessionImportResult struct {
	// SessionID is the session holding the transcript.
	SessionID string `json:"sessionId"`
	// Entries is the number of entries this import added.
	Entries int `json:"entries"`
	// ContextCompacted is the number of context.compacted entries in the
	// imported session.
	ContextCompacted int `json:"contextCompacted"`
	// Discovered has one summary per harness after a discovery (sessionId
	// is then "" and entries counts every harness's).
	Discovered []DiscoverSummary `json:"discovered,omitempty"`
}

// DoctorParams asks for the capability report.
type DoctorParams struct {
	// Harness limits the report to one adapter.
	Harness string `json:"harness,omitempty"`
}

// DoctorResult is the capability report per adapter.
type DoctorResult struct {
	// Adapters holds one report per adapter.
	Adapters []AdapterReport `json:"adapters"`
	// DataDir is Bridge's data directory.
	DataDir string `json:"dataDir"`
	// Database is the database file.
	Database string `json:"database,omitempty"`
	// SchemaVersion is the database's schema version.
	SchemaVersion int `json:"schemaVersion"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r DoctorResult) MarshalJSON() ([]byte, error) {
	type plain DoctorResult
	return json.Marshal(filled(plain(r)))
}

// AdapterReport is one adapter's probe.
type AdapterReport struct {
	// Harness names the adapter.
	Harness string `json:"harness"`
	// OK is true when the harness is installed and every required
	// capability is available.
	OK bool `json:"ok"`
	// Installed is false when the adapter found no program (or server) to
	// drive.
	Installed bool `json:"installed"`
	// Binary is the harness program found.
	Binary string `json:"binary,omitempty"`
	// Version is the harness program's version.
	Version string `json:"version,omitempty"`
	// Capabilities lists every probed capability.
	Capabilities []Capability `json:"capabilities"`
	// Missing names the required capabilities that are not available.
	Missing []string `json:"missing"`
	// Presets names the presets session/create accepts for this adapter
	// (the configuration file's, then the harness's own); absent when none
	// or the harness is not installed.
	Presets []string `json:"presets,omitempty"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r AdapterReport) MarshalJSON() ([]byte, error) {
	type plain AdapterReport
	return json.Marshal(filled(plain(r)))
}

// Capability is one probed capability.
type Capability struct {
	// Name is the capability ("session.list", "native.resume"…).
	Name string `json:"name"`
	// Required is true when Need is "required".
	Required bool `json:"required"`
	// Need says whether the harness needs it: required, optional or
	// not_applicable (one rule, core.CapabilityNeed).
	Need CapabilityNeed `json:"need"`
	// Reason says why it has that need, or what Bridge does without it.
	Reason string `json:"reason"`
	// Available is true when the adapter has it.
	Available bool `json:"available"`
	// Detail says why it is missing, or how it is provided.
	Detail string `json:"detail,omitempty"`
}

// CapabilityNeed says whether a harness needs a capability.
type CapabilityNeed string

// Capability needs.
const (
	NeedRequired      CapabilityNeed = "required"
	NeedOptional      CapabilityNeed = "optional"
	NeedNotApplicable CapabilityNeed = "not_applicable"
)

// SessionChangedNotification tells the client a session's title, archive
// flag or active branch changed without an entry being added
// (session/changed): renamed or archived through this Bridge, or changed by
// another process sharing the record (serve, web and acp follow them). It
// carries the session's fields as they are now.
type SessionChangedNotification struct {
	// SessionID is the session.
	SessionID string `json:"sessionId"`
	// Title is the session's title now.
	Title string `json:"title"`
	// Archived is true once the session is archived.
	Archived bool `json:"archived"`
	// HeadID is the entry the active branch ends at.
	HeadID string `json:"headId"`
}
