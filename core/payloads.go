package core

import "encoding/json"

// The payload of each entry kind, as a Go type: the one place that says
// what members a kind's payload has (RequiredFields says which of them
// every payload must hold). Writers build these values and pass them to
// Payload; readers decode into them. The contract (schema.EntryKinds) maps
// every kind to its type, so the JSON Schema and the TypeScript package
// describe each payload from these declarations. Members a harness has and
// others lack are optional (omitempty); a member written by an older Bridge
// and unknown here is kept in the record as it is.
//
// context.compacted is Compacted, plan.updated Plan, usage.reported Usage;
// checkpoint, compaction and compaction.requested are core/checkpoint's
// Checkpoint, Boundary and Request.

// UserMessagePayload is the payload of a user.message entry: what the user
// (or Bridge on the user's behalf) said.
type UserMessagePayload struct {
	// Text is the message's text.
	Text string `json:"text"`
	// Images counts the images sent with the message.
	Images int `json:"images,omitempty"`
	// Attachments are the images sent with the message: kept by Bridge
	// (by content hash), or by the harness (by its own ref).
	Attachments []MessageAttachment `json:"attachments,omitempty"`
	// HostImages are images the harness keeps for a message it recorded.
	HostImages []HostImage `json:"hostImages,omitempty"`
	// TurnID is the harness's id of the turn, where it has one.
	TurnID string `json:"turnId,omitempty"`
	// MessageID is the harness's id of the message, where it has one.
	MessageID string `json:"messageId,omitempty"`
	// PartID is the harness's id of the message part, where it has one.
	PartID string `json:"partId,omitempty"`
	// Steered is true for a prompt delivered into the turn that was
	// running (session/prompt with steer).
	Steered bool `json:"steered,omitempty"`
}

// MessageAttachment is an image a user message carried: an Attachment
// Bridge keeps (SHA256, Bytes), or one the harness keeps (Ref).
type MessageAttachment struct {
	// SHA256 is the content hash of an image Bridge keeps.
	SHA256 string `json:"sha256,omitempty"`
	// MediaType is the image's MIME type.
	MediaType string `json:"mediaType"`
	// Bytes is the image's size.
	Bytes int `json:"bytes,omitempty"`
	// Ref is the harness's own id of an image it keeps.
	Ref string `json:"ref,omitempty"`
}

// AssistantMessagePayload is the payload of an assistant.message entry:
// what the agent answered.
type AssistantMessagePayload struct {
	// Text is the message's text.
	Text string `json:"text"`
	// Model is the model that wrote it, where the harness says.
	Model string `json:"model,omitempty"`
	// TurnID is the harness's id of the turn, where it has one.
	TurnID string `json:"turnId,omitempty"`
	// MessageID is the harness's id of the message, where it has one.
	MessageID string `json:"messageId,omitempty"`
	// PartID is the harness's id of the message part, where it has one.
	PartID string `json:"partId,omitempty"`
	// ParentToolUseID is the tool call (a subagent) the message was written in.
	ParentToolUseID string `json:"parentToolUseId,omitempty"`
	// Phase is Codex's phase of the message ("final_answer"…).
	Phase string `json:"phase,omitempty"`
	// Error is the harness's error the message reports (Claude Code).
	Error json.RawMessage `json:"error,omitempty"`
}

// ToolStartedPayload is the payload of a tool.started entry: the agent
// called a tool.
type ToolStartedPayload struct {
	// ToolID is the harness's id of the call; its tool.completed names it too.
	ToolID string `json:"toolId"`
	// Name is the tool's name.
	Name string `json:"name,omitempty"`
	// Title is the harness's one-line description of the call.
	Title string `json:"title,omitempty"`
	// ToolKind is the harness's class of tool ("edit", "execute"…).
	ToolKind string `json:"toolKind,omitempty"`
	// Status is the call's status as the harness reports it.
	Status string `json:"status,omitempty"`
	// Input is the tool's input, as the harness gave it.
	Input any `json:"input,omitempty"`
	// Command, Cwd, Server, Tool, Arguments, Query and Changes are the
	// members of a Codex item that say what the call does, as Codex gave
	// them (a command run, an MCP tool call, a web search, a file change).
	Command   json.RawMessage `json:"command,omitempty"`
	Cwd       json.RawMessage `json:"cwd,omitempty"`
	Server    json.RawMessage `json:"server,omitempty"`
	Tool      json.RawMessage `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Query     json.RawMessage `json:"query,omitempty"`
	Changes   json.RawMessage `json:"changes,omitempty"`
	// Action is what a Codex local shell call does, from its rollout.
	Action json.RawMessage `json:"action,omitempty"`
	// TurnID is the harness's id of the turn, where it has one.
	TurnID string `json:"turnId,omitempty"`
	// MessageID is the harness's id of the message, where it has one.
	MessageID string `json:"messageId,omitempty"`
	// PartID is the harness's id of the message part, where it has one.
	PartID string `json:"partId,omitempty"`
	// ParentToolUseID is the tool call (a subagent) the call was made in.
	ParentToolUseID string `json:"parentToolUseId,omitempty"`
}

// ToolCompletedPayload is the payload of a tool.completed entry: a tool
// call ended.
type ToolCompletedPayload struct {
	// ToolID is the harness's id of the call its tool.started names.
	ToolID string `json:"toolId"`
	// Name is the tool's name.
	Name string `json:"name,omitempty"`
	// Status is the call's final status as the harness reports it.
	Status string `json:"status,omitempty"`
	// Title is the harness's one-line description of the call.
	Title string `json:"title,omitempty"`
	// Input is the tool's input, where the harness repeats it at the end.
	Input any `json:"input,omitempty"`
	// Output is the tool's output.
	Output any `json:"output,omitempty"`
	// OutputTruncated is true when Output keeps only the output's end.
	OutputTruncated bool `json:"outputTruncated,omitempty"`
	// Content is the output as content blocks (ACP agents).
	Content any `json:"content,omitempty"`
	// Result is the harness's result record, whole.
	Result any `json:"result,omitempty"`
	// Error is the harness's error, where the call failed.
	Error any `json:"error,omitempty"`
	// IsError is true when the call failed.
	IsError bool `json:"isError,omitempty"`
	// ExitCode is a command's exit code.
	ExitCode *int `json:"exitCode,omitempty"`
	// DurationMs is how long the call ran, as the harness measured it.
	DurationMs *int64 `json:"durationMs,omitempty"`
	// Replaces is the earlier record of the same call that this one replaces.
	Replaces any `json:"replaces,omitempty"`
	// Abandoned is true when Bridge closed the call because the harness
	// stopped before reporting its end.
	Abandoned bool `json:"abandoned,omitempty"`
	// TurnID is the harness's id of the turn, where it has one.
	TurnID string `json:"turnId,omitempty"`
	// MessageID is the harness's id of the message, where it has one.
	MessageID string `json:"messageId,omitempty"`
	// PartID is the harness's id of the message part, where it has one.
	PartID string `json:"partId,omitempty"`
	// ParentToolUseID is the tool call (a subagent) the call was made in.
	ParentToolUseID string `json:"parentToolUseId,omitempty"`
}

// ApprovalRequestedPayload is the payload of an approval.requested entry:
// the harness asked before running a tool.
type ApprovalRequestedPayload struct {
	// ApprovalID is the request's id; its approval.resolved names it too.
	ApprovalID string `json:"approvalId"`
	// ToolCallID is the tool call the approval is for.
	ToolCallID string `json:"toolCallId,omitempty"`
	// Title says what the tool would do.
	Title string `json:"title,omitempty"`
	// Kind is the class of action ("edit", "execute"…).
	Kind string `json:"kind,omitempty"`
	// Options are the answers offered.
	Options []ApprovalOption `json:"options,omitempty"`
	// Harness is the harness that asked.
	Harness string `json:"harness,omitempty"`
	// RawInput is the tool's input as the harness gave it.
	RawInput any `json:"rawInput,omitempty"`
	// Method is the harness's request method (Codex), and Params its
	// params, whole.
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	// Policy is the preset's policy that answered, where no one was asked.
	Policy string `json:"policy,omitempty"`
}

// ApprovalResolvedPayload is the payload of an approval.resolved entry:
// how an approval was answered.
type ApprovalResolvedPayload struct {
	// ApprovalID is the request's id.
	ApprovalID string `json:"approvalId"`
	// OptionID is the option chosen.
	OptionID string `json:"optionId,omitempty"`
	// OptionKind is the chosen option's kind (allow_once, reject_once…).
	OptionKind ApprovalOptionKind `json:"optionKind,omitempty"`
	// Decision is the harness's own word for the answer, where it has one.
	Decision string `json:"decision,omitempty"`
	// Allowed is true when the tool may run.
	Allowed bool `json:"allowed"`
	// By is who decided: the client, the preset's policy…
	By DecidedBy `json:"by,omitempty"`
	// Reason says why, when the decider said.
	Reason string `json:"reason,omitempty"`
	// Remembered is true when an earlier "always" answer decided.
	Remembered bool `json:"remembered,omitempty"`
	// Cancelled is true when the request was withdrawn unanswered.
	Cancelled bool `json:"cancelled,omitempty"`
}

// WorkerResultPayload is the payload of a worker.result entry: a worker's
// (subagent's, or the session's own) final result.
type WorkerResultPayload struct {
	// Status is "completed" or "failed".
	Status string `json:"status"`
	// Result is the worker's final text.
	Result string `json:"result,omitempty"`
	// Decisions are decisions the worker reports.
	Decisions []any `json:"decisions,omitzero"`
	// FilesChanged are the files the worker changed.
	FilesChanged []string `json:"filesChanged,omitzero"`
	// TaskID is the harness's id of the worker's task.
	TaskID string `json:"taskId,omitempty"`
	// Tool is the tool that ran the worker.
	Tool string `json:"tool,omitempty"`
	// ToolID is the tool call that ran the worker.
	ToolID string `json:"toolId,omitempty"`
}

// ArtifactCreatedPayload is the payload of an artifact.created entry: a
// file the agent wrote or changed.
type ArtifactCreatedPayload struct {
	// Path is the file's path.
	Path string `json:"path"`
	// Tool is the tool that wrote it.
	Tool string `json:"tool,omitempty"`
	// ToolID is the tool call that wrote it.
	ToolID string `json:"toolId,omitempty"`
	// ToolKind is the harness's class of that tool.
	ToolKind string `json:"toolKind,omitempty"`
	// Change is the kind of change (add, update, delete), where the
	// harness says.
	Change string `json:"change,omitempty"`
	// ParentToolUseID is the tool call (a subagent) that wrote it.
	ParentToolUseID string `json:"parentToolUseId,omitempty"`
	// Hash is the harness's hash of the change, where it has one.
	Hash string `json:"hash,omitempty"`
	// PartID is the harness's id of the message part, where it has one.
	PartID string `json:"partId,omitempty"`
}

// ModelChangedPayload is the payload of a model.changed entry.
type ModelChangedPayload struct {
	// Model is the model now in use.
	Model string `json:"model"`
	// From is the model before.
	From string `json:"from,omitempty"`
	// Downgrade is true when the new model is a smaller one.
	Downgrade bool `json:"downgrade,omitempty"`
}

// EffortChangedPayload is the payload of an effort.changed entry.
type EffortChangedPayload struct {
	// Effort is the reasoning effort now in use.
	Effort string `json:"effort"`
	// From is the effort before.
	From string `json:"from,omitempty"`
	// Downgrade is true when the change came with a smaller model.
	Downgrade bool `json:"downgrade,omitempty"`
}

// StatusPayload is the payload of a session.status entry: where the
// harness's session stands ("idle", "stopped", "suspended", "error"…).
type StatusPayload struct {
	// Status is the harness's state.
	Status string `json:"status"`
	// By is who changed it, where Bridge did.
	By string `json:"by,omitempty"`
	// Reason says why, where the harness says.
	Reason string `json:"reason,omitempty"`
	// StopReason is why the harness's turn stopped.
	StopReason string `json:"stopReason,omitempty"`
	// Subtype, IsError, NumTurns, CostUSD and DurationMs are a finished
	// Claude Code turn's result.
	Subtype    string   `json:"subtype,omitempty"`
	IsError    *bool    `json:"isError,omitempty"`
	NumTurns   *int     `json:"numTurns,omitempty"`
	CostUSD    *float64 `json:"costUsd,omitempty"`
	DurationMs *int64   `json:"durationMs,omitempty"`
	// ExitCode is the harness process's exit code, once it stopped.
	ExitCode *int `json:"exitCode,omitempty"`
	// StderrTail is the end of the stopped process's standard error.
	StderrTail string `json:"stderrTail,omitempty"`
	// Error is the harness's error message.
	Error string `json:"error,omitempty"`
	// ErrorName is the harness's name for the error.
	ErrorName string `json:"errorName,omitempty"`
	// Message is the harness's message.
	Message string `json:"message,omitempty"`
	// Errors are the harness's error records.
	Errors any `json:"errors,omitempty"`
	// Attempt counts a retrying harness's attempts.
	Attempt int `json:"attempt,omitempty"`
	// WillRetry says whether the harness retries after the error.
	WillRetry *bool `json:"willRetry,omitempty"`
	// Usage is the turn's token usage as the harness reports it.
	Usage any `json:"usage,omitempty"`
	// Result is the turn's result as the harness reports it.
	Result any `json:"result,omitempty"`
	// CompactResult is a harness compaction's outcome.
	CompactResult string `json:"compactResult,omitempty"`
	// CompactError is a failed harness compaction's error.
	CompactError any `json:"compactError,omitempty"`
	// CodexErrorInfo is Codex's class of the error.
	CodexErrorInfo any `json:"codexErrorInfo,omitempty"`
	// TurnID is the harness's id of the turn, where it has one.
	TurnID string `json:"turnId,omitempty"`
	// Raw is the harness's own report, whole.
	Raw any `json:"raw,omitempty"`
}

// ContextUsagePayload is the payload of a context.usage entry: a reading of
// the harness's context gauge.
type ContextUsagePayload struct {
	// Used is the tokens in the window.
	Used int64 `json:"used"`
	// Size is the window's size, when known.
	Size int64 `json:"size,omitempty"`
	// AfterCompaction names the compaction the reading follows.
	AfterCompaction string `json:"afterCompaction,omitempty"`
	// TurnID is the harness's id of the turn, where it has one.
	TurnID string `json:"turnId,omitempty"`
}

// HarnessEventPayload is the payload of a harness.event entry: a harness
// message Bridge has no mapping for, kept whole.
type HarnessEventPayload struct {
	// Type is the harness's message type.
	Type string `json:"type"`
	// Text is the message's text, where it has one.
	Text string `json:"text,omitempty"`
	// Raw is the message, whole.
	Raw any `json:"raw,omitempty"`
	// Params are the notification's params, whole (a JSON-RPC harness).
	Params json.RawMessage `json:"params,omitempty"`
	// ItemType and Item are an unmapped item's type and the item, whole.
	ItemType string          `json:"itemType,omitempty"`
	Item     json.RawMessage `json:"item,omitempty"`
	// TurnID is the harness's id of the turn, where it has one.
	TurnID string `json:"turnId,omitempty"`
	// Line is a line of the harness's output that is not JSON, and Error
	// why it could not be read.
	Line  string `json:"line,omitempty"`
	Error string `json:"error,omitempty"`
	// Kind and Harness name an entry a hosting client sent that Bridge
	// could not record as it was (its kind, and the harness it hosts).
	Kind    string `json:"kind,omitempty"`
	Harness string `json:"harness,omitempty"`
	// Block is an unmapped content block, whole (Claude Code).
	Block json.RawMessage `json:"block,omitempty"`
	// ParentToolUseID is the tool call (a subagent) the event came from.
	ParentToolUseID string `json:"parentToolUseId,omitempty"`
}

// CompactionFailedPayload is the payload of a compaction.failed entry: a
// checkpoint request whose replies were unusable.
type CompactionFailedPayload struct {
	// Reason is why the checkpoint was asked for.
	Reason string `json:"reason"`
	// Attempt is the last attempt (0 or 1).
	Attempt int `json:"attempt"`
	// Error says what went wrong.
	Error string `json:"error,omitempty"`
}

// BranchSummaryPayload is the payload of a branch.summary entry: the marker
// a checkpoint commit leaves at the start of the retained entries.
type BranchSummaryPayload struct {
	// Summary is the marker's text.
	Summary string `json:"summary"`
	// CheckpointEntryID is the checkpoint entry the commit wrote.
	CheckpointEntryID string `json:"checkpointEntryId,omitempty"`
	// FirstRetainedEntryID is where the retained entries start.
	FirstRetainedEntryID string `json:"firstRetainedEntryId,omitempty"`
}

// SessionRestoredPayload is the payload of a session.restored entry: how a
// session came back.
type SessionRestoredPayload struct {
	// Mode is hot, native, checkpoint_restored or fresh.
	Mode RestoreMode `json:"mode"`
	// Reason says why this mode.
	Reason string `json:"reason,omitempty"`
	// NativeError is the harness's error when its native resume failed.
	NativeError string `json:"nativeError,omitempty"`
	// CheckpointEntryID is the checkpoint the session was restored from.
	CheckpointEntryID string `json:"checkpointEntryId,omitempty"`
}

// ResumeFailedPayload is the payload of a session.resume_failed entry.
type ResumeFailedPayload struct {
	// Reason says what Bridge tried.
	Reason string `json:"reason"`
	// Error is the harness's error.
	Error string `json:"error"`
	// NativeID is the harness's session id that could not be resumed.
	NativeID string `json:"nativeId,omitempty"`
}

// MigrationHandoffPayload is the payload of a migration.handoff entry: the
// first entry of a session a migration started.
type MigrationHandoffPayload struct {
	// SourceSessionID is the session the task came from.
	SourceSessionID string `json:"sourceSessionId"`
	// Summary is the handoff text.
	Summary string `json:"summary"`
	// PreviewID is the preview that was executed.
	PreviewID string `json:"previewId,omitempty"`
	// SourceHarness is the source session's harness.
	SourceHarness string `json:"sourceHarness,omitempty"`
	// SourcePreset is the source session's preset.
	SourcePreset string `json:"sourcePreset,omitempty"`
}

// SessionForkedPayload is the payload of a session.forked entry: the first
// entry of a session forked from another.
type SessionForkedPayload struct {
	// SourceSessionID is the session forked from.
	SourceSessionID string `json:"sourceSessionId"`
	// SourceEntryID is the entry forked at.
	SourceEntryID string `json:"sourceEntryId"`
	// SourceHarness is the source session's harness.
	SourceHarness string `json:"sourceHarness,omitempty"`
	// ProjectedEntries counts the entries given to the fork.
	ProjectedEntries int `json:"projectedEntries"`
	// CheckpointEntryID is the checkpoint the fork started from.
	CheckpointEntryID string `json:"checkpointEntryId,omitempty"`
}
