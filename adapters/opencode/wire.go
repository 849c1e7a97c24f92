package opencode

import "encoding/json"

// Request bodies Bridge sends to the OpenCode server. A member OpenCode
// reads as absent when unset is omitempty.

// createSessionBody is POST /session's body.
type createSessionBody struct {
	Title string     `json:"title,omitempty"`
	Agent string     `json:"agent,omitempty"`
	Model *modelSpec `json:"model,omitempty"`
}

// modelSpec is a session's model: provider, model and variant (effort).
type modelSpec struct {
	ID         string `json:"id"`
	ProviderID string `json:"providerID"`
	Variant    string `json:"variant,omitempty"`
}

// archiveBody is the PATCH /session/{id} body that archives a session.
type archiveBody struct {
	Time struct {
		Archived int64 `json:"archived"`
	} `json:"time"`
}

// renameBody is the PATCH /session/{id} body that renames a session.
type renameBody struct {
	Title string `json:"title"`
}

// partInput is a prompt part: text, or a file (an image as a data URL).
type partInput struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Mime     string `json:"mime,omitempty"`
	Filename string `json:"filename,omitempty"`
	URL      string `json:"url,omitempty"`
}

// promptBody is POST /session/{id}/message's body.
type promptBody struct {
	Parts   []partInput  `json:"parts"`
	Model   *promptModel `json:"model,omitempty"`
	Agent   string       `json:"agent,omitempty"`
	Variant string       `json:"variant,omitempty"`
}

type promptModel struct {
	ProviderID string `json:"providerID"`
	ModelID    string `json:"modelID"`
}

// summarizeBody is POST /session/{id}/summarize's body.
type summarizeBody struct {
	ProviderID string `json:"providerID"`
	ModelID    string `json:"modelID"`
	Auto       bool   `json:"auto"`
}

// permissionReply is POST /permission/{id}/reply's body.
type permissionReply struct {
	Reply   string `json:"reply"`
	Message string `json:"message,omitempty"`
}

// compactedRaw is the raw member of an OpenCode context.compacted entry:
// what Bridge saw of the compaction. Members are in name order.
type compactedRaw struct {
	CompactionPart   json.RawMessage `json:"compactionPart,omitempty"`
	Event            json.RawMessage `json:"event,omitempty"`
	SummaryMessage   json.RawMessage `json:"summaryMessage,omitempty"`
	SummaryMessageID string          `json:"summaryMessageId,omitempty"`
	SummaryTokens    *tokens         `json:"summaryTokens,omitempty"`
}
