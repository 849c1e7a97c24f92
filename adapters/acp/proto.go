package acp

import "encoding/json"

// ACP wire shapes (schema v1, plus the unstable parts Bridge uses). Only the
// members Bridge reads are declared; everything else is kept raw where it
// matters (harness.event entries, context.compacted raw).

const protocolVersion = 1

type initializeParams struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities clientCapabilities `json:"clientCapabilities"`
	ClientInfo         *implementation    `json:"clientInfo,omitempty"`
}

type clientCapabilities struct {
	FS       fsCapabilities        `json:"fs"`
	Terminal bool                  `json:"terminal"`
	Session  clientSessionCapabils `json:"session"`
}

type fsCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

// clientSessionCapabils advertises the unstable compaction contract so that
// agents send compaction_update.
type clientSessionCapabils struct {
	Compaction *struct{} `json:"compaction,omitempty"`
}

type implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
}

type initializeResult struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities agentCapabilities `json:"agentCapabilities"`
	AgentInfo         *implementation   `json:"agentInfo,omitempty"`
	AuthMethods       json.RawMessage   `json:"authMethods,omitempty"`
}

type agentCapabilities struct {
	LoadSession         bool                `json:"loadSession"`
	PromptCapabilities  promptCapabilities  `json:"promptCapabilities"`
	SessionCapabilities sessionCapabilities `json:"sessionCapabilities"`
}

type promptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

// sessionCapabilities: a present member ({}) means supported.
type sessionCapabilities struct {
	List   json.RawMessage `json:"list,omitempty"`
	Resume json.RawMessage `json:"resume,omitempty"`
	Delete json.RawMessage `json:"delete,omitempty"`
	Close  json.RawMessage `json:"close,omitempty"`
	// Fork (unstable): session/fork copies a session into a new one.
	Fork json.RawMessage `json:"fork,omitempty"`
	// Compaction (unstable): the agent reports its compactions through
	// compaction_update.
	Compaction json.RawMessage `json:"compaction,omitempty"`
}

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

type newSessionParams struct {
	Cwd        string `json:"cwd"`
	McpServers []any  `json:"mcpServers"`
}

type loadSessionParams struct {
	SessionID  string `json:"sessionId"`
	Cwd        string `json:"cwd"`
	McpServers []any  `json:"mcpServers"`
}

// sessionSetup is what session/new, session/load and session/resume return.
type sessionSetup struct {
	SessionID     string          `json:"sessionId"`
	Models        *modelState     `json:"models,omitempty"`
	Modes         json.RawMessage `json:"modes,omitempty"`
	ConfigOptions []configOption  `json:"configOptions,omitempty"`
}

// modelState is the unstable model list of session/new (session/set_model).
type modelState struct {
	AvailableModels []struct {
		ModelID     string `json:"modelId"`
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
	} `json:"availableModels"`
	CurrentModelID string `json:"currentModelId"`
}

// configOption is a session configuration option; one with category
// "model" selects the model through session/set_config_option.
type configOption struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Category     string          `json:"category,omitempty"`
	Type         string          `json:"type,omitempty"`
	CurrentValue json.RawMessage `json:"currentValue,omitempty"`
	Options      json.RawMessage `json:"options,omitempty"`
}

type contentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Data     string `json:"data,omitempty"`
}

type promptParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []contentBlock `json:"prompt"`
}

type promptResult struct {
	StopReason string `json:"stopReason"`
	// Usage (unstable) is the turn's token usage, when the agent reports
	// it (usage.go).
	Usage *promptUsage `json:"usage,omitempty"`
}

// forkSessionParams are session/fork's params.
type forkSessionParams struct {
	SessionID  string           `json:"sessionId"`
	Cwd        string           `json:"cwd"`
	McpServers []any            `json:"mcpServers"`
	Meta       *forkSessionMeta `json:"_meta,omitempty"`
}

type sessionNotification struct {
	SessionID string          `json:"sessionId"`
	Update    json.RawMessage `json:"update"`
}

type listSessionsResult struct {
	Sessions []struct {
		SessionID string `json:"sessionId"`
		Cwd       string `json:"cwd"`
		Title     string `json:"title,omitempty"`
		UpdatedAt string `json:"updatedAt,omitempty"`
	} `json:"sessions"`
	NextCursor string `json:"nextCursor,omitempty"`
}

type permissionRequest struct {
	SessionID string          `json:"sessionId"`
	ToolCall  json.RawMessage `json:"toolCall"`
	Options   []struct {
		OptionID string `json:"optionId"`
		Name     string `json:"name"`
		Kind     string `json:"kind"`
	} `json:"options"`
}

// listSessionsParams are session/list's params: both members are sent
// only when set.
type listSessionsParams struct {
	Cursor string `json:"cursor,omitempty"`
	Cwd    string `json:"cwd,omitempty"`
}

// sessionParams are the params of a request or notification naming only
// the session (session/cancel).
type sessionParams struct {
	SessionID string `json:"sessionId"`
}

type setModeParams struct {
	ModeID    string `json:"modeId"`
	SessionID string `json:"sessionId"`
}

type setModelParams struct {
	ModelID   string `json:"modelId"`
	SessionID string `json:"sessionId"`
}

type setConfigOptionParams struct {
	ConfigID  string `json:"configId"`
	SessionID string `json:"sessionId"`
	Value     string `json:"value"`
}

// permissionResponse answers session/request_permission.
type permissionResponse struct {
	Outcome permissionOutcome `json:"outcome"`
}

// permissionOutcome is "cancelled", or "selected" with the option chosen.
type permissionOutcome struct {
	OptionID string `json:"optionId,omitempty"`
	Outcome  string `json:"outcome"`
}

var cancelledOutcome = permissionResponse{Outcome: permissionOutcome{Outcome: "cancelled"}}

// forkMetaOptions is _meta.claudeCode.options of a session/fork.
type forkMetaOptions struct {
	PersistSession bool `json:"persistSession"`
}

type forkMetaClaudeCode struct {
	Options forkMetaOptions `json:"options"`
}

type forkSessionMeta struct {
	ClaudeCode forkMetaClaudeCode `json:"claudeCode"`
}
