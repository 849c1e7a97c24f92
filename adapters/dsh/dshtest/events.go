package dshtest

import "encoding/json"

// The data of the events the fake server writes, in the shapes DSH
// 0.1.0-rc.8 writes them (testdata/dsh holds recordings), and the values
// of its prompt, goal and command routes. Members are declared in name
// order, as in wire.go.

// contentBlock is one block of a message: {type:"text", text} or
// {type:"image", attachment}.
type contentBlock struct {
	Attachment *attachmentRef `json:"attachment,omitempty"`
	Text       *string        `json:"text,omitempty"`
	Type       string         `json:"type"`
}

// textBlock is a text block holding s.
func textBlock(s string) contentBlock { return contentBlock{Type: "text", Text: &s} }

// attachmentRef is where DSH keeps an image a message carried.
type attachmentRef struct {
	AttachmentID string `json:"attachmentId"`
	Bytes        int    `json:"bytes"`
	MediaType    string `json:"mediaType"`
}

// message is a user or assistant message: user/message's data, an inbox
// entry, assistant/message's message.
type message struct {
	Content []contentBlock `json:"content"`
	ID      string         `json:"id"`
	Role    string         `json:"role"`
	Source  any            `json:"source"`
}

// The sources of a message (its source member).
type (
	// userSource: a prompt, stamped with the rpcId of its session.prompt.
	userSource struct {
		Kind  string `json:"kind"`
		RPCID string `json:"rpcId"`
	}
	// goalSource: a goal round.
	goalSource struct {
		GoalID   string `json:"goalId"`
		Kind     string `json:"kind"`
		Revision int64  `json:"revision"`
		Round    int    `json:"round"`
	}
	// modelSource: the model's answer.
	modelSource struct {
		Kind     string `json:"kind"`
		Model    string `json:"model"`
		Provider string `json:"provider"`
	}
	// pluginSource: the compaction checkpoint that replaces a span.
	pluginSource struct {
		CompactionID    string `json:"compactionId"`
		Kind            string `json:"kind"`
		Plugin          string `json:"plugin"`
		SourceCommandID string `json:"sourceCommandId"`
	}
)

// inboxSpliced is agent/inbox/spliced's data: a prompt entering the inbox
// (inserted), or a turn taking it (removedCount).
type inboxSpliced struct {
	Inserted     []message `json:"inserted"`
	RemovedCount int       `json:"removedCount,omitempty"`
	Start        int       `json:"start"`
	Target       string    `json:"target"`
}

// turnData is turn/start's data.
type turnData struct {
	Turn int `json:"turn"`
}

// stepData is step/start's and step/end's data.
type stepData struct {
	Step int `json:"step"`
	Turn int `json:"turn"`
}

// turnEnd is turn/end's data.
type turnEnd struct {
	Reason reason `json:"reason"`
	Turn   int    `json:"turn"`
}

type reason struct {
	Kind string `json:"kind"`
}

// requestContext is request/context's data.
type requestContext struct {
	ContextWindow int    `json:"contextWindow"`
	Model         string `json:"model"`
	Provider      string `json:"provider"`
}

// chunkData is assistant/chunk's data; Chunk is one of the chunk types
// below.
type chunkData struct {
	Chunk any `json:"chunk"`
	Step  int `json:"step"`
	Turn  int `json:"turn"`
}

// The chunks of a streamed answer.
type (
	blockStart struct {
		BlockType string `json:"blockType"`
		Index     int    `json:"index"`
		Type      string `json:"type"`
	}
	textDelta struct {
		Index int    `json:"index"`
		Text  string `json:"text"`
		Type  string `json:"type"`
	}
	blockEnd struct {
		Block contentBlock `json:"block"`
		Index int          `json:"index"`
		Type  string       `json:"type"`
	}
	usageChunk struct {
		Type  string `json:"type"`
		Usage usage  `json:"usage"`
	}
	finishChunk struct {
		Reason reason `json:"reason"`
		Type   string `json:"type"`
	}
)

// usage is a request's token usage.
type usage struct {
	CacheReadTokens int `json:"cacheReadTokens"`
	InputTokens     int `json:"inputTokens"`
	OutputTokens    int `json:"outputTokens"`
}

// assistantData is assistant/message's data.
type assistantData struct {
	Message message `json:"message"`
	Step    int     `json:"step"`
	Turn    int     `json:"turn"`
	Usage   usage   `json:"usage"`
}

// goalChange is a goal/change event's data (create, update, pause,
// block).
type goalChange struct {
	CreatedAt     int64    `json:"createdAt"`
	Goal          goalData `json:"goal"`
	Kind          string   `json:"kind"`
	Operation     string   `json:"operation"`
	RoundsStarted int      `json:"roundsStarted"`
	UpdatedAt     int64    `json:"updatedAt"`
	Version       int      `json:"version"`
}

// goalData is the goal as a goal/change carries it; BlockedReason is set
// when a round limit blocked it.
type goalData struct {
	BlockedReason *blockedReason `json:"blockedReason,omitempty"`
	ID            string         `json:"id"`
	MaxGoalRounds int            `json:"maxGoalRounds"`
	Objective     string         `json:"objective"`
	Phase         string         `json:"phase"`
	Revision      int64          `json:"revision"`
}

type blockedReason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// goalCleared is the goal/change data of goal.clear.
type goalCleared struct {
	Cleared   goalRef `json:"cleared"`
	ClearedAt int64   `json:"clearedAt"`
	Kind      string  `json:"kind"`
	Operation string  `json:"operation"`
	Version   int     `json:"version"`
}

// goalRef names a goal at a revision (goal.create's and goal.pause's
// value is {ref}).
type goalRef struct {
	ID       string `json:"id"`
	Revision int64  `json:"revision"`
}

type refValue struct {
	Ref goalRef `json:"ref"`
}

// commandRun is command/run's data.
type commandRun struct {
	Args      string `json:"args"`
	CommandID string `json:"commandId"`
	Name      string `json:"name"`
	Source    source `json:"source"`
}

// commandResult is a command's result: commands/execute's result member,
// and (with its commandId) command/done's data.
type commandResult struct {
	CommandID      string `json:"commandId,omitempty"`
	Kind           string `json:"kind"`
	SourceEventSeq *int64 `json:"sourceEventSeq,omitempty"`
	Text           string `json:"text"`
}

// executeValue is commands/execute's value.
type executeValue struct {
	CommandID string        `json:"commandId"`
	Result    commandResult `json:"result"`
}

// compactionLifecycle is compaction/start's and compaction/end's data (a
// manual compaction: no turn); Error is a failed compaction's.
type compactionLifecycle struct {
	CompactionID    string          `json:"compactionId"`
	Error           string          `json:"error,omitempty"`
	SourceCommandID string          `json:"sourceCommandId"`
	Turn            json.RawMessage `json:"turn"`
}

// noTurn is a standalone bracket's turn.
var noTurn = json.RawMessage("null")

// compactionSummary is compaction/summary's data; the members after
// ShadowedTokenCount are those of a summary the model streamed.
type compactionSummary struct {
	CompactionID       string         `json:"compactionId"`
	LLMStreamCall      bool           `json:"llmStreamCall,omitempty"`
	MaxTokens          int            `json:"maxTokens,omitempty"`
	Model              string         `json:"model,omitempty"`
	Provider           string         `json:"provider,omitempty"`
	RawOutput          []contentBlock `json:"rawOutput,omitempty"`
	ShadowedRange      seqRange       `json:"shadowedRange"`
	ShadowedSeqs       []int64        `json:"shadowedSeqs"`
	ShadowedTokenCount int            `json:"shadowedTokenCount"`
	SourceCommandID    string         `json:"sourceCommandId"`
	Summary            []contentBlock `json:"summary"`
}

type seqRange struct {
	End   int64 `json:"end"`
	Start int64 `json:"start"`
}

// replaceOp is the surface op of a message that replaces a span.
type replaceOp struct {
	End   int64  `json:"end"`
	Op    string `json:"op"`
	Start int64  `json:"start"`
}

// hostDescription is host.describe's value.
type hostDescription struct {
	AttachedSessions int    `json:"attachedSessions"`
	CanOpenPath      bool   `json:"canOpenPath"`
	Cwd              string `json:"cwd"`
	Home             string `json:"home"`
	Model            string `json:"model"`
	Provider         string `json:"provider"`
	Version          string `json:"version"`
}

// llmModelsValue is llm.models' value.
type llmModelsValue struct {
	Failures []json.RawMessage `json:"failures"`
	Groups   json.RawMessage   `json:"groups"`
}
