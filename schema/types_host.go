package schema

import (
	"encoding/json"

	"github.com/bridge-dev/bridge/core"
)

// A client that hosts sessions itself (initializationOptions.hostsSessions)
// answers the requests below, named host/<capability>, and pushes each live
// session's events back with the host/event notification. Sessions are named
// by the host's own id (nativeId).

// HostAck is the empty result of a host/* request that returns nothing.
type HostAck struct{}

// HostProbeParams asks the hosting client what it can do (host/probe). It
// must not change anything.
type HostProbeParams struct{}

// HostProbeResult reports the hosting client's harness and capabilities.
type HostProbeResult struct {
	// Harness names the host's harness.
	Harness string `json:"harness,omitempty"`
	// Binary is the harness program the host drives, if any.
	Binary string `json:"binary,omitempty"`
	// Version is the host's or harness's version.
	Version string `json:"version,omitempty"`
	// Capabilities lists every capability the host has probed.
	Capabilities []Capability `json:"capabilities"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r HostProbeResult) MarshalJSON() ([]byte, error) {
	type plain HostProbeResult
	return json.Marshal(filled(plain(r)))
}

// HostSessionListParams lists the host's sessions (host/session.list).
type HostSessionListParams struct {
	// Cwd keeps only sessions in this working directory.
	Cwd string `json:"cwd,omitempty"`
}

// HostSessionListResult is the host's sessions.
type HostSessionListResult struct {
	// Sessions are the host's sessions.
	Sessions []HostSession `json:"sessions"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r HostSessionListResult) MarshalJSON() ([]byte, error) {
	type plain HostSessionListResult
	return json.Marshal(filled(plain(r)))
}

// HostSession is a session as the host lists it.
type HostSession = core.HostSession

// HostSessionCreateParams starts a session on the host
// (host/session.create). Its events follow as host/event.
type HostSessionCreateParams struct {
	// Cwd is the working directory.
	Cwd string `json:"cwd"`
	// Preset is the tool-and-prompt assembly to lock the session to.
	Preset *Preset `json:"preset,omitempty"`
	// Model is the model to start with.
	Model string `json:"model,omitempty"`
	// Effort is the reasoning effort to start with.
	Effort string `json:"effort,omitempty"`
	// Title is the session's title.
	Title string `json:"title,omitempty"`
}

// HostSessionCreateResult names the host's new session.
type HostSessionCreateResult struct {
	// NativeID is the host's id of the session; later requests and events
	// use it.
	NativeID string `json:"nativeId"`
}

// HostSessionResumeParams resumes the host's own stored session
// (host/native.resume). The host proves the resume by answering with the
// same nativeId, or fails with the harness's own error text in the error
// message.
type HostSessionResumeParams struct {
	// NativeID is the stored session to resume.
	NativeID string `json:"nativeId"`
	// Cwd is the working directory.
	Cwd string `json:"cwd"`
	// Preset is the session's preset.
	Preset *Preset `json:"preset,omitempty"`
	// Model is the model to resume with.
	Model string `json:"model,omitempty"`
	// Effort is the reasoning effort to resume with.
	Effort string `json:"effort,omitempty"`
}

// HostSessionResumeResult names the resumed session.
type HostSessionResumeResult struct {
	// NativeID is the resumed session's id; it must equal the requested one.
	NativeID string `json:"nativeId"`
}

// HostSessionHistoryParams reads the host's stored history of a session
// (host/session.history).
type HostSessionHistoryParams struct {
	// NativeID is the session.
	NativeID string `json:"nativeId"`
}

// HostSessionHistoryResult is the session's history, oldest first.
type HostSessionHistoryResult struct {
	// Entries are the history mapped to entries, oldest first.
	Entries []HostEntry `json:"entries"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r HostSessionHistoryResult) MarshalJSON() ([]byte, error) {
	type plain HostSessionHistoryResult
	return json.Marshal(filled(plain(r)))
}

// HostEntry is an entry as a host reports it, before Bridge records it.
type HostEntry struct {
	// Kind is the entry kind ("user.message", "context.compacted"…).
	Kind string `json:"kind"`
	// Payload is the kind's JSON object, with the kind's required fields.
	Payload json.RawMessage `json:"payload" jsonschema:"type=object" jsonschema_extras:"additionalProperties=true"`
	// NativeID is the host's id of the event; Bridge records an event with
	// the same id once.
	NativeID string `json:"nativeId,omitempty"`
	// TokenEstimate is the host's estimate of the entry's size in tokens.
	TokenEstimate int64 `json:"tokenEstimate,omitempty"`
}

// MarshalJSON writes an absent payload as {} rather than null.
func (e HostEntry) MarshalJSON() ([]byte, error) {
	type plain HostEntry
	return json.Marshal(filled(plain(e)))
}

// HostSessionModelsParams lists the models on offer (host/session.models).
type HostSessionModelsParams struct{}

// HostSessionModelsResult is the models on offer.
type HostSessionModelsResult struct {
	// Models are the models on offer.
	Models []Model `json:"models"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r HostSessionModelsResult) MarshalJSON() ([]byte, error) {
	type plain HostSessionModelsResult
	return json.Marshal(filled(plain(r)))
}

// Model is a model a host offers.
type Model = core.Model

// HostSelectModelParams switches a live session's model and/or effort
// (host/session.selectModel).
type HostSelectModelParams struct {
	// NativeID is the session.
	NativeID string `json:"nativeId"`
	// Model is the new model; absent keeps the current one.
	Model string `json:"model,omitempty"`
	// Effort is the new effort; absent keeps the current one.
	Effort string `json:"effort,omitempty"`
}

// HostSessionPromptParams runs one turn on the host (host/session.prompt);
// the turn's entries come back as host/event meanwhile, before the reply.
type HostSessionPromptParams struct {
	// NativeID is the session.
	NativeID string `json:"nativeId"`
	// Content is the prompt, in order.
	Content []Content `json:"content"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (p HostSessionPromptParams) MarshalJSON() ([]byte, error) {
	type plain HostSessionPromptParams
	return json.Marshal(filled(plain(p)))
}

// HostSessionPromptResult is how the turn ended.
type HostSessionPromptResult struct {
	// StopReason is end_turn, cancelled, error, max_tokens or the host's own
	// reason.
	StopReason string `json:"stopReason"`
}

// HostSessionParams names one of the host's sessions (host/session.cancel,
// host/session.close, host/workspace.archiveSession).
type HostSessionParams struct {
	// NativeID is the session.
	NativeID string `json:"nativeId"`
}

// HostSessionRenameParams renames a session on the host
// (host/session.rename).
type HostSessionRenameParams struct {
	// NativeID is the session.
	NativeID string `json:"nativeId"`
	// Title is the new title.
	Title string `json:"title"`
}

// HostAttachmentParams recovers an image referenced in the host's history
// (host/session.attachment).
type HostAttachmentParams struct {
	// NativeID is the session.
	NativeID string `json:"nativeId"`
	// Ref is the host's reference to the attachment, as its history gave it.
	Ref string `json:"ref"`
}

// HostAttachmentResult is the recovered attachment.
type HostAttachmentResult struct {
	// Content is the attachment, usually an image block.
	Content Content `json:"content"`
}

// HostCompactParams runs the host's compaction command
// (host/compaction.command). The context.compacted entry follows as
// host/event.
type HostCompactParams struct {
	// NativeID is the session.
	NativeID string `json:"nativeId"`
	// Focus tells the summariser what to keep.
	Focus string `json:"focus,omitempty"`
}

// HostCompactResult says whether the command took the focus.
type HostCompactResult struct {
	// FocusApplied is false when a focus was given and could not be passed.
	FocusApplied bool `json:"focusApplied"`
	// FocusNote says why the focus was not applied.
	FocusNote string `json:"focusNote,omitempty"`
}

// HostWorkspaceListParams lists known working directories
// (host/workspace.list).
type HostWorkspaceListParams struct{}

// HostWorkspaceListResult is the known working directories.
type HostWorkspaceListResult struct {
	// Workspaces are the known working directories.
	Workspaces []Workspace `json:"workspaces"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r HostWorkspaceListResult) MarshalJSON() ([]byte, error) {
	type plain HostWorkspaceListResult
	return json.Marshal(filled(plain(r)))
}

// Workspace is a working directory a host knows.
type Workspace = core.Workspace

// HostPresetListParams lists the presets usable with the host
// (host/agentPreset.list).
type HostPresetListParams struct{}

// HostPresetListResult is the usable presets.
type HostPresetListResult struct {
	// Presets are the usable presets.
	Presets []Preset `json:"presets"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r HostPresetListResult) MarshalJSON() ([]byte, error) {
	type plain HostPresetListResult
	return json.Marshal(filled(plain(r)))
}

// Preset is a complete tool-and-prompt assembly for one harness.
type Preset struct {
	// Name is the preset's name.
	Name string `json:"name"`
	// Harness is the harness it is for.
	Harness string `json:"harness"`
	// Description says what the preset is for.
	Description string `json:"description,omitempty"`
	// Model is the preset's model.
	Model string `json:"model,omitempty"`
	// Effort is the preset's reasoning effort.
	Effort string `json:"effort,omitempty"`
	// AllowedTools lists the tools allowed (Claude Code).
	AllowedTools []string `json:"allowedTools,omitempty"`
	// DisallowedTools lists the tools refused (Claude Code).
	DisallowedTools []string `json:"disallowedTools,omitempty"`
	// PermissionMode is the permission mode (Claude Code).
	PermissionMode string `json:"permissionMode,omitempty"`
	// AppendSystemPrompt is appended to the system prompt (Claude Code).
	AppendSystemPrompt string `json:"appendSystemPrompt,omitempty"`
	// Profile is the profile (Codex).
	Profile string `json:"profile,omitempty"`
	// ApprovalPolicy says how approvals are answered (Codex, ACP).
	ApprovalPolicy string `json:"approvalPolicy,omitempty"`
	// Agent is the agent (OpenCode, DeepSeek Harness).
	Agent string `json:"agent,omitempty"`
}

// HostGoalCreateParams gives a live session a resumable goal
// (host/goal.create).
type HostGoalCreateParams struct {
	// NativeID is the session.
	NativeID string `json:"nativeId"`
	// Text is the goal.
	Text string `json:"text"`
	// Rounds is the goal's round budget (default 1).
	Rounds int `json:"rounds,omitempty"`
}

// HostGoalCreateResult names the new goal.
type HostGoalCreateResult struct {
	// GoalID is the host's id of the goal.
	GoalID string `json:"goalId"`
}

// HostGoalParams names a goal of a live session (host/goal.pause,
// host/goal.clear).
type HostGoalParams struct {
	// NativeID is the session.
	NativeID string `json:"nativeId"`
	// GoalID is the goal.
	GoalID string `json:"goalId"`
}

// HostEventNotification pushes one event of a live hosted session to Bridge
// (host/event, client to server). Exactly one of entry, gauge or exit is
// normally set.
type HostEventNotification struct {
	// NativeID is the session the event belongs to.
	NativeID string `json:"nativeId"`
	// Entry is appended to the record (context.compacted included).
	Entry *HostEntry `json:"entry,omitempty"`
	// Gauge is a context usage reading.
	Gauge *Gauge `json:"gauge,omitempty"`
	// Model is the model the host reports it is using.
	Model string `json:"model,omitempty"`
	// Exit says the session's process ended.
	Exit *HostExit `json:"exit,omitempty"`
}

// Gauge is a context-window reading.
type Gauge = core.Gauge

// HostExit says how a hosted session's process ended.
type HostExit struct {
	// ExitCode is the process's exit code.
	ExitCode int `json:"exitCode"`
	// StderrTail is the end of its standard error.
	StderrTail string `json:"stderrTail,omitempty"`
	// Error is the failure, if any.
	Error string `json:"error,omitempty"`
}
