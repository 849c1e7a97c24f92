package claudecode

import "encoding/json"

// The stream-json lines Bridge writes to Claude Code's stdin: small
// structs tagged as Claude Code spells each member. A user message's
// blocks keep their members in name order, as a decoded map marshals
// them: the echo of a written line is matched by that encoding (steer.go).

// userMessageLine is a user message; parent_tool_use_id is null.
type userMessageLine struct {
	Type            string      `json:"type"`
	Message         userMessage `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	SessionID       string      `json:"session_id"`
}

// userMessage's Content is a string (a single text block, so that slash
// commands are dispatched) or a list of textBlock and imageBlock.
type userMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type textBlock struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

type imageBlock struct {
	Source imageSource `json:"source"`
	Type   string      `json:"type"`
}

type imageSource struct {
	Data      string `json:"data"`
	MediaType string `json:"media_type"`
	Type      string `json:"type"`
}

// controlRequestLine asks the CLI something (its request's subtype says
// what).
type controlRequestLine struct {
	Type      string         `json:"type"`
	RequestID string         `json:"request_id"`
	Request   controlRequest `json:"request"`
}

// controlRequest is a control request: its subtype, and the members that
// subtype takes.
type controlRequest struct {
	Subtype  string        `json:"subtype"`
	Model    string        `json:"model,omitempty"`
	Title    string        `json:"title,omitempty"`
	Settings *flagSettings `json:"settings,omitempty"`
}

type flagSettings struct {
	EffortLevel string `json:"effortLevel"`
}

// controlResponseLine answers a control request of the CLI.
type controlResponseLine struct {
	Type     string          `json:"type"`
	Response controlResponse `json:"response"`
}

// controlResponse is a success (with the answer in Response) or an error.
type controlResponse struct {
	Subtype   string              `json:"subtype"`
	RequestID string              `json:"request_id"`
	Response  *permissionDecision `json:"response,omitempty"`
	Error     string              `json:"error,omitempty"`
}

// permissionDecision answers can_use_tool: allow (with the input to run)
// or deny (with why).
type permissionDecision struct {
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	Message      string          `json:"message,omitempty"`
	ToolUseID    string          `json:"toolUseID"`
}
