package dshtest

// The fake server's answers and requests, typed. Members are declared in
// name order: each type marshals to the bytes the map it replaced did
// (encoding/json sorts a map's keys); a member the map always wrote is
// never omitempty.

// envelope is a server-response.
type envelope struct {
	Result rpcResult `json:"result"`
	RPCID  string    `json:"rpcId"`
	Type   string    `json:"type"`
}

// rpcResult is {ok:true, value} or {ok:false, error}.
type rpcResult struct {
	Error *errorBody `json:"error,omitempty"`
	OK    bool       `json:"ok"`
	Value any        `json:"value,omitempty"`
}

// errorBody is an {ok:false} answer's error; Details carries a goal error's
// goalCode.
type errorBody struct {
	Code    string        `json:"code"`
	Details *errorDetails `json:"details,omitempty"`
	Message string        `json:"message"`
}

type errorDetails struct {
	GoalCode string `json:"goalCode"`
}

// request is a client-request (what Real.Call sends to the real DSH).
type request struct {
	Method  string `json:"method"`
	Payload any    `json:"payload"`
	RPCID   string `json:"rpcId"`
	Type    string `json:"type"`
}

// settingsPatch is settings.update's payload replacing a provider's model
// list.
type settingsPatch struct {
	NS    string `json:"ns"`
	Patch struct {
		Models []modelSetting `json:"models"`
	} `json:"patch"`
}

// modelSetting is one model of DSH's llm-deepseek settings.
type modelSetting struct {
	ContextWindow   int      `json:"contextWindow"`
	ID              string   `json:"id"`
	InputModalities []string `json:"inputModalities,omitempty"`
	Name            string   `json:"name"`
}

// sessionCreated is session.create's value.
type sessionCreated struct {
	AgentPreset string `json:"agentPreset"`
	SessionID   string `json:"sessionId"`
}

// projections is a session's head state as session.history and
// session.list carry it.
type projections struct {
	AsOfSeq int `json:"asOfSeq"`
	Values  struct {
		ContextPressure contextPressure `json:"contextPressure"`
		Goal            *goalState      `json:"goal,omitempty"`
		Title           string          `json:"title"`
	} `json:"values"`
}

type contextPressure struct {
	ContextWindow   int `json:"contextWindow"`
	PressureTokens  int `json:"pressureTokens"`
	ProjectedTokens int `json:"projectedTokens"`
}

// goalState is the goal projection.
type goalState struct {
	CreatedAt     int64 `json:"createdAt"`
	Goal          *goal `json:"goal"`
	RoundsStarted int   `json:"roundsStarted"`
	UpdatedAt     int64 `json:"updatedAt"`
}

// sessionList is session.list's value.
type sessionList struct {
	Items []sessionItem `json:"items"`
}

type sessionItem struct {
	AgentPreset string      `json:"agentPreset"`
	Blank       bool        `json:"blank"`
	Cwd         string      `json:"cwd"`
	Projections projections `json:"projections"`
	Running     bool        `json:"running"`
	SessionID   string      `json:"sessionId"`
	UpdatedAt   int64       `json:"updatedAt"`
}

// history is session.history's (and session.historyWindow's) value.
type history struct {
	Events      []historyItem `json:"events"`
	HasMore     bool          `json:"hasMore"`
	Projections projections   `json:"projections"`
}

type historyItem struct {
	Event event `json:"event"`
}

// currentModel is session.models' current member.
type currentModel struct {
	Model           string `json:"model"`
	Provider        string `json:"provider"`
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
}

// attachmentValue is session.attachment's value.
type attachmentValue struct {
	Attachment struct {
		AttachmentID string `json:"attachmentId"`
		MediaType    string `json:"mediaType"`
	} `json:"attachment"`
	Data string `json:"data"`
}

// The data of the events a new session starts with, and of a rename.
type (
	presetData struct {
		Preset string `json:"preset"`
	}
	modeData struct {
		Mode string `json:"mode"`
	}
	policyData struct {
		Policy string `json:"policy"`
	}
	titleData struct {
		MessageSeqs []int64 `json:"messageSeqs"`
		Source      source  `json:"source"`
		Title       string  `json:"title"`
	}
	source struct {
		Kind string `json:"kind"`
	}
)
