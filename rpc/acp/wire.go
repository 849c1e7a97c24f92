package acp

import (
	"encoding/json"

	"github.com/bridge-dev/bridge/rpc/service"
)

// The Agent Client Protocol's wire shapes as Bridge writes them: small
// structs, each member tagged as ACP spells it. A member that is absent
// when empty is omitempty (or omitzero, where an empty list is still
// sent); one ACP says is null is a pointer or an interface without it.

// update is one session/update's update object (ACP's SessionUpdate):
// sessionUpdate names the variant, the other members are the variant's.
type update struct {
	SessionUpdate string `json:"sessionUpdate"`
	// Content is a text block (message chunks) or a tool call's content
	// list.
	Content   any    `json:"content,omitempty"`
	MessageID string `json:"messageId,omitempty"`
	// Tool calls (tool_call, tool_call_update).
	ToolCallID string          `json:"toolCallId,omitempty"`
	Title      string          `json:"title,omitempty"`
	Kind       string          `json:"kind,omitempty"`
	Status     string          `json:"status,omitempty"`
	RawInput   json.RawMessage `json:"rawInput,omitempty"`
	RawOutput  json.RawMessage `json:"rawOutput,omitempty"`
	Locations  []location      `json:"locations,omitempty"`
	// Entries are a plan's steps (plan; sent even when empty).
	Entries []planEntry `json:"entries,omitzero"`
	// CompactionID and Summary are a compaction_update's.
	CompactionID string      `json:"compactionId,omitempty"`
	Summary      []textBlock `json:"summary,omitempty"`
	// AvailableCommands are an available_commands_update's.
	AvailableCommands []availableCommand `json:"availableCommands,omitzero"`
	// Used and Size are a usage_update's.
	Used *int64 `json:"used,omitempty"`
	Size *int64 `json:"size,omitempty"`
	Cost *cost  `json:"cost,omitempty"`
	Meta any    `json:"_meta,omitempty"`
}

// textBlock is an ACP text content block.
type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func text(s string) textBlock { return textBlock{Type: "text", Text: s} }

// toolContent is a tool call's content item holding a content block.
type toolContent struct {
	Type    string    `json:"type"`
	Content textBlock `json:"content"`
}

// diff is a tool call's content item showing an edit; oldText is null for
// a new file. Its members are in name order, as a map's would be.
type diff struct {
	NewText string  `json:"newText"`
	OldText *string `json:"oldText"`
	Path    string  `json:"path"`
	Type    string  `json:"type"`
}

type location struct {
	Path string `json:"path"`
}

type planEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

// availableCommand is a slash command; input is null when it takes none.
type availableCommand struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Input       *commandInput `json:"input"`
}

type commandInput struct {
	Hint string `json:"hint"`
}

// bridgeMeta is the _meta every Bridge-specific member travels in.
type bridgeMeta[T any] struct {
	Bridge T `json:"bridge"`
}

func inBridge[T any](v T) bridgeMeta[T] { return bridgeMeta[T]{Bridge: v} }

// entryMeta names the recorded entry an update shows.
type entryMeta struct {
	EntryID string `json:"entryId"`
	Kind    string `json:"kind"`
	Seq     int64  `json:"seq"`
}

// restoration is how a session came back (a load or resume result, the
// restoration notice).
type restoration struct {
	RestoreMode       string `json:"restoreMode"`
	Reason            string `json:"reason,omitempty"`
	NativeError       string `json:"nativeError,omitempty"`
	CheckpointEntryID string `json:"checkpointEntryId,omitempty"`
}

func restoreMeta(r service.Restored) bridgeMeta[restoration] {
	return inBridge(restoration{RestoreMode: string(r.Mode), Reason: r.Reason, NativeError: r.NativeError,
		CheckpointEntryID: r.CheckpointEntryID})
}

// sessionInfoUpdate is ACP's session_info_update (service's
// session/changed): Title null clears the client's title.
type sessionInfoUpdate struct {
	SessionUpdate string                   `json:"sessionUpdate"`
	Title         *string                  `json:"title"`
	Meta          bridgeMeta[sessionState] `json:"_meta"`
}

// sessionState is what session/changed says beyond the title.
type sessionState struct {
	Archived bool   `json:"archived"`
	HeadID   string `json:"headId,omitempty"`
}

type sessionInfoParams struct {
	SessionID string            `json:"sessionId"`
	Update    sessionInfoUpdate `json:"update"`
}

type sessionUpdateParams struct {
	SessionID string `json:"sessionId"`
	Update    update `json:"update"`
}

// permissionToolCall is the tool call a session/request_permission asks
// about.
type permissionToolCall struct {
	ToolCallID string          `json:"toolCallId"`
	Title      string          `json:"title"`
	Status     string          `json:"status"`
	Kind       string          `json:"kind,omitempty"`
	RawInput   json.RawMessage `json:"rawInput,omitempty"`
}

type permissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

type requestPermissionParams struct {
	SessionID string             `json:"sessionId"`
	ToolCall  permissionToolCall `json:"toolCall"`
	Options   []permissionOption `json:"options"`
}

// promptResult answers session/prompt: why the turn stopped, and what it
// cost where the ledger knows (ACP's unstable usage).
type promptResult struct {
	StopReason string       `json:"stopReason"`
	Usage      *promptUsage `json:"usage,omitempty"`
}

// promptUsage's members are in name order, as a map's would be.
type promptUsage struct {
	CachedReadTokens  int64 `json:"cachedReadTokens"`
	CachedWriteTokens int64 `json:"cachedWriteTokens"`
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	TotalTokens       int64 `json:"totalTokens"`
}

// cost is a session's cumulative cost (a usage_update's).
type cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// sessionResult answers session/new, load, resume and fork.
type sessionResult struct {
	SessionID     string         `json:"sessionId,omitempty"`
	ConfigOptions []configOption `json:"configOptions,omitempty"`
	Meta          any            `json:"_meta"`
}

type newSessionMeta struct {
	Harness         string `json:"harness"`
	NativeSessionID string `json:"nativeSessionId"`
}

type forkMeta struct {
	Harness    string `json:"harness"`
	ForkedFrom string `json:"forkedFrom"`
	ForkedAt   string `json:"forkedAt"`
}

type sessionInfo struct {
	SessionID string                  `json:"sessionId"`
	Cwd       string                  `json:"cwd"`
	UpdatedAt string                  `json:"updatedAt"`
	Title     string                  `json:"title,omitempty"`
	Meta      bridgeMeta[sessionBits] `json:"_meta"`
}

type sessionBits struct {
	Harness string `json:"harness"`
	Status  string `json:"status"`
}

type listResult struct {
	Sessions   []sessionInfo `json:"sessions"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

type closeMeta struct {
	Suspended         bool   `json:"suspended"`
	CheckpointEntryID string `json:"checkpointEntryId,omitempty"`
}

type metaResult[T any] struct {
	Meta bridgeMeta[T] `json:"_meta"`
}

// configOption is a session config option (a select).
type configOption struct {
	ID           string        `json:"id"`
	Name         string        `json:"name"`
	Category     string        `json:"category"`
	Type         string        `json:"type"`
	CurrentValue string        `json:"currentValue"`
	Options      []configValue `json:"options"`
}

type configValue struct {
	Value string `json:"value"`
	Name  string `json:"name"`
}

type configOptionsResult struct {
	ConfigOptions []configOption `json:"configOptions"`
}
