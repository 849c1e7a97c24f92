package main

import "encoding/json"

// The agent's wire shapes. Members are declared in name order, so each
// line is byte for byte what a map of the same members marshalled to.

type response struct {
	ID      json.RawMessage `json:"id"`
	JSONRPC string          `json:"jsonrpc"`
	Result  any             `json:"result"`
}

type errorResponse struct {
	Error   rpcError        `json:"error"`
	ID      json.RawMessage `json:"id"`
	JSONRPC string          `json:"jsonrpc"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type request struct {
	ID      int    `json:"id"`
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

type notification struct {
	JSONRPC string       `json:"jsonrpc"`
	Method  string       `json:"method"`
	Params  updateParams `json:"params"`
}

type updateParams struct {
	SessionID string `json:"sessionId"`
	Update    any    `json:"update"`
}

type textBlock struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

func block(s string) textBlock { return textBlock{Type: "text", Text: s} }

// chunkUpdate is a user_message_chunk or agent_message_chunk.
type chunkUpdate struct {
	Content       textBlock `json:"content"`
	SessionUpdate string    `json:"sessionUpdate"`
}

type modeUpdate struct {
	CurrentModeID string `json:"currentModeId"`
	SessionUpdate string `json:"sessionUpdate"`
}

type commandsUpdate struct {
	AvailableCommands []command `json:"availableCommands"`
	SessionUpdate     string    `json:"sessionUpdate"`
}

// command is an available command; input is null when it takes none.
type command struct {
	Description string        `json:"description"`
	Input       *commandInput `json:"input"`
	Name        string        `json:"name"`
}

type commandInput struct {
	Hint string `json:"hint"`
}

type toolCall struct {
	Kind          string        `json:"kind"`
	RawInput      toolCallInput `json:"rawInput"`
	SessionUpdate string        `json:"sessionUpdate"`
	Status        string        `json:"status"`
	Title         string        `json:"title"`
	ToolCallID    string        `json:"toolCallId"`
}

type toolCallInput struct {
	Name string `json:"name"`
}

// toolCallUpdate is a tool_call_update; rawOutput is sent on completion.
type toolCallUpdate struct {
	RawOutput     *toolCallOutput `json:"rawOutput,omitempty"`
	SessionUpdate string          `json:"sessionUpdate"`
	Status        string          `json:"status"`
	ToolCallID    string          `json:"toolCallId"`
}

type toolCallOutput struct {
	OK bool `json:"ok"`
}

type usageUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	Size          int64  `json:"size"`
	Used          int64  `json:"used"`
}

// compactionUpdate is a compaction_update; summary is sent on completion.
type compactionUpdate struct {
	CompactionID  string      `json:"compactionId"`
	SessionUpdate string      `json:"sessionUpdate"`
	Status        string      `json:"status"`
	Summary       []textBlock `json:"summary,omitempty"`
}

type compactionChunk struct {
	CompactionID  string    `json:"compactionId"`
	Content       textBlock `json:"content"`
	SessionUpdate string    `json:"sessionUpdate"`
}

type initializeResult struct {
	AgentCapabilities agentCapabilities `json:"agentCapabilities"`
	AgentInfo         agentInfo         `json:"agentInfo"`
	AuthMethods       []struct{}        `json:"authMethods"`
	ProtocolVersion   int               `json:"protocolVersion"`
}

type agentCapabilities struct {
	LoadSession         bool                `json:"loadSession"`
	PromptCapabilities  promptCapabilities  `json:"promptCapabilities"`
	SessionCapabilities sessionCapabilities `json:"sessionCapabilities"`
}

type promptCapabilities struct {
	Image bool `json:"image"`
}

// sessionCapabilities: list, and with SCRIPTAGENT_COMPACT=1 the unstable
// compaction contract.
type sessionCapabilities struct {
	Compaction *struct{} `json:"compaction,omitempty"`
	Fork       *struct{} `json:"fork,omitempty"`
	List       struct{}  `json:"list"`
}

type agentInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Version string `json:"version"`
}

type newSessionResult struct {
	Models    models `json:"models"`
	Modes     modes  `json:"modes"`
	SessionID string `json:"sessionId"`
}

type loadSessionResult struct {
	Models models `json:"models"`
}

type models struct {
	AvailableModels []model `json:"availableModels"`
	CurrentModelID  string  `json:"currentModelId"`
}

type model struct {
	ModelID string `json:"modelId"`
	Name    string `json:"name"`
}

type modes struct {
	AvailableModes []mode `json:"availableModes"`
	CurrentModeID  string `json:"currentModeId"`
}

type mode struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type listResult struct {
	Sessions []sessionInfo `json:"sessions"`
}

type sessionInfo struct {
	Cwd       string `json:"cwd"`
	SessionID string `json:"sessionId"`
	Title     string `json:"title"`
	UpdatedAt string `json:"updatedAt"`
}

type promptResult struct {
	StopReason string `json:"stopReason"`
}

type permissionRequest struct {
	Options   []permissionOption `json:"options"`
	SessionID string             `json:"sessionId"`
	ToolCall  permissionToolCall `json:"toolCall"`
}

type permissionToolCall struct {
	Title      string `json:"title"`
	ToolCallID string `json:"toolCallId"`
}

type permissionOption struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	OptionID string `json:"optionId"`
}
