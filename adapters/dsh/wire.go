package dsh

import (
	"encoding/json"

	"github.com/bridge-dev/bridge/core"
)

// The payloads the adapter sends to DSH's web RPC, and the entry payloads
// it records. Members are declared in name order: each type marshals to
// the bytes the map it replaced did (encoding/json sorts a map's keys), so
// DSH, the record and tests that compare payload bytes see no change. A
// member the map always wrote is never omitempty (an empty string, zero or
// null stays in the JSON); one it wrote only when set is omitempty, or
// omitzero where it was written whenever it was non-nil.

// sessionArgs is the payload of the routes that take only a session id
// (session.cancel, session.fork, session.models,
// workspace.archiveSession).
type sessionArgs struct {
	SessionID string `json:"sessionId"`
}

// forkArgs is session.fork's payload: the child is seeded through the
// turn that ends at or after atSeq (the last completed turn without it).
type forkArgs struct {
	AtSeq     *int64 `json:"atSeq,omitempty"`
	SessionID string `json:"sessionId"`
}

// listArgs is session.list's payload: a page cursor after the first page.
type listArgs struct {
	Cursor string `json:"cursor,omitempty"`
}

// historyArgs is session.history's and session.historyWindow's payload.
// BeforeSeq is set for every page after the newest.
type historyArgs struct {
	BeforeSeq   *int64 `json:"beforeSeq,omitempty"`
	MaxMessages int    `json:"maxMessages"`
	SessionID   string `json:"sessionId"`
}

// createArgs is session.create's payload.
type createArgs struct {
	AgentPreset string `json:"agentPreset,omitempty"`
	Cwd         string `json:"cwd"`
}

// promptArgs is session.prompt's payload.
type promptArgs struct {
	Content   []promptBlock `json:"content"`
	Mode      string        `json:"mode"`
	SessionID string        `json:"sessionId"`
}

// promptBlock is one block of a prompt: {type:"text", text} or
// {type:"image", mediaType, data}.
type promptBlock struct {
	Data      string  `json:"data,omitempty"`
	MediaType string  `json:"mediaType,omitempty"`
	Text      *string `json:"text,omitempty"`
	Type      string  `json:"type"`
}

// selectModelArgs is session.selectModel's payload.
type selectModelArgs struct {
	Model           string `json:"model"`
	Provider        string `json:"provider"`
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	SessionID       string `json:"sessionId"`
}

// renameArgs is session.rename's payload.
type renameArgs struct {
	SessionID string `json:"sessionId"`
	Title     string `json:"title"`
}

// attachmentArgs is session.attachment's payload.
type attachmentArgs struct {
	AttachmentID string `json:"attachmentId"`
	SessionID    string `json:"sessionId"`
}

// goalCreateArgs is goal.create's payload.
type goalCreateArgs struct {
	MaxGoalRounds int    `json:"maxGoalRounds"`
	Objective     string `json:"objective"`
	SessionID     string `json:"sessionId"`
}

// goalRefArgs is goal.pause's and goal.clear's payload.
type goalRefArgs struct {
	Ref       goalRef `json:"ref"`
	SessionID string  `json:"sessionId"`
}

// remoteArgs wraps the payload of a typed remote ("ns/method"), which DSH
// takes as {"args": …}.
type remoteArgs[T any] struct {
	Args T `json:"args"`
}

// agentArgs is commands/list's args.
type agentArgs struct {
	AgentID string `json:"agentId"`
}

// executeArgs is commands/execute's args: a slash command line with no
// images.
type executeArgs struct {
	AgentID string            `json:"agentId"`
	Images  []json.RawMessage `json:"images"`
	Line    string            `json:"line"`
}

// Payloads the probe sends to routes that change something: each has a
// wrong type in a member every variant requires, so DSH's schema refuses
// it before acting.
type (
	// invalidSession is refused by every session-bound route.
	invalidSession struct {
		SessionID int `json:"sessionId"`
	}
	// invalidCreate is refused by session.create.
	invalidCreate struct {
		AgentPreset int `json:"agentPreset"`
		Cwd         int `json:"cwd"`
	}
)

// userMessage is the payload of a user.message entry from DSH: core's
// members plus where the message came from (DSH's source.kind), the goal
// that sent a goal round, and the surface op a replace left unresolved.
type userMessage struct {
	GoalID     *string          `json:"goalId,omitempty"`
	HostImages []core.HostImage `json:"hostImages,omitempty"`
	Images     int              `json:"images,omitempty"`
	Replaces   []string         `json:"replaces,omitzero"`
	Source     string           `json:"source"`
	SurfaceOp  json.RawMessage  `json:"surfaceOp,omitempty"`
	Text       string           `json:"text"`
}

// assistantMessage is the payload of an assistant.message entry from DSH.
// Provider is written whenever Model is.
type assistantMessage struct {
	Model     string          `json:"model,omitempty"`
	Provider  *string         `json:"provider,omitempty"`
	Reasoning string          `json:"reasoning,omitempty"`
	Replaces  []string        `json:"replaces,omitzero"`
	Text      string          `json:"text"`
	Usage     json.RawMessage `json:"usage,omitempty"`
}

// toolStarted is the payload of a tool.started entry from DSH (the input
// as the tool call gave it, null when it gave none).
type toolStarted struct {
	Input  json.RawMessage `json:"input"`
	Name   string          `json:"name"`
	ToolID string          `json:"toolId"`
}

// toolCompleted is the payload of a tool.completed entry from DSH: the
// tool/result event's data, whole.
type toolCompleted struct {
	Replaces []string        `json:"replaces,omitzero"`
	Result   json.RawMessage `json:"result"`
	ToolID   string          `json:"toolId"`
}

// harnessEvent is the payload of a harness.event entry keeping a DSH event
// whole; Refused is the compaction contract's error when the mapper
// refused the event.
type harnessEvent struct {
	Data      json.RawMessage `json:"data"`
	Refused   string          `json:"refused,omitempty"`
	Replaces  []string        `json:"replaces,omitzero"`
	Seq       int64           `json:"seq"`
	SurfaceOp json.RawMessage `json:"surfaceOp,omitempty"`
	Type      string          `json:"type"`
}

// unreadableLine is the payload of a harness.event entry keeping a session
// log line that was not an event.
type unreadableLine struct {
	Error string `json:"error"`
	Line  int    `json:"line"`
	Text  string `json:"text"`
	Type  string `json:"type"`
}

// compactionRaw is a context.compacted entry's raw member: the bracket's
// events, whole.
type compactionRaw struct {
	End         json.RawMessage `json:"end"`
	Prune       json.RawMessage `json:"prune,omitzero"`
	Replacement json.RawMessage `json:"replacement,omitzero"`
	Replaces    []string        `json:"replaces,omitzero"`
	Start       json.RawMessage `json:"start"`
	Summary     json.RawMessage `json:"summary,omitzero"`
}

// replacement is where a bracket's checkpoint message sits: its seq, its
// surface op and the events it came from.
type replacement struct {
	Seq             int64           `json:"seq"`
	SourceEventSeqs []int64         `json:"sourceEventSeqs"`
	SurfaceOp       json.RawMessage `json:"surfaceOp"`
}
