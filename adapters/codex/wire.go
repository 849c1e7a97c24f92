package codex

import "encoding/json"

// The app-server's request params and answers as Bridge writes them: small
// structs tagged as Codex spells each member, absent when empty unless
// Codex needs it.

// threadParams are thread/start's, thread/resume's and thread/fork's.
type threadParams struct {
	ThreadID       string `json:"threadId,omitempty"`
	ApprovalPolicy string `json:"approvalPolicy,omitempty"`
	Cwd            string `json:"cwd,omitempty"`
	Model          string `json:"model,omitempty"`
	Ephemeral      bool   `json:"ephemeral,omitempty"`
	ExcludeTurns   bool   `json:"excludeTurns,omitempty"`
}

// threadRef names a thread (thread/archive, thread/compact/start, …).
type threadRef struct {
	ThreadID string `json:"threadId"`
}

type threadReadParams struct {
	ThreadID     string `json:"threadId"`
	IncludeTurns bool   `json:"includeTurns"`
}

type threadNameParams struct {
	ThreadID string `json:"threadId"`
	Name     string `json:"name"`
}

// goalParams set (objective and status) or pause (status) a thread's goal.
type goalParams struct {
	ThreadID  string `json:"threadId"`
	Objective string `json:"objective,omitempty"`
	Status    string `json:"status"`
}

type turnRef struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

type turnStartParams struct {
	ThreadID string      `json:"threadId"`
	Input    []userInput `json:"input"`
	Model    string      `json:"model,omitempty"`
	Effort   string      `json:"effort,omitempty"`
}

type turnSteerParams struct {
	ThreadID       string      `json:"threadId"`
	Input          []userInput `json:"input"`
	ExpectedTurnID string      `json:"expectedTurnId"`
}

// userInput is one item of a prompt: text (with its empty text_elements)
// or an image as a data URL.
type userInput struct {
	Type         string `json:"type"`
	Text         string `json:"text,omitempty"`
	TextElements *[]any `json:"text_elements,omitempty"`
	URL          string `json:"url,omitempty"`
}

// pageParams page thread/list and model/list.
type pageParams struct {
	Limit  int    `json:"limit,omitempty"`
	Cwd    string `json:"cwd,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

type initializeParams struct {
	ClientInfo   clientInfo   `json:"clientInfo"`
	Capabilities capabilities `json:"capabilities"`
}

type clientInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Version string `json:"version"`
}

type capabilities struct {
	ExperimentalAPI bool `json:"experimentalApi"`
}

// decisionResult answers an approval request.
type decisionResult struct {
	Decision string `json:"decision"`
}

// permissionsResult answers item/permissions/requestApproval: the
// permissions granted ({} for none).
type permissionsResult struct {
	Permissions json.RawMessage `json:"permissions"`
}

// actionResult answers an MCP elicitation.
type actionResult struct {
	Action string `json:"action"`
}
