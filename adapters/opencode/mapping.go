package opencode

import (
	"encoding/json"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// harnessName is the adapter's name in records and probes.
const harnessName = "opencode"

// part is the subset of an OpenCode message part the adapter reads; Raw
// keeps the whole part.
type part struct {
	ID        string     `json:"id"`
	SessionID string     `json:"sessionID"`
	MessageID string     `json:"messageID"`
	Type      string     `json:"type"`
	Text      string     `json:"text"`
	Synthetic bool       `json:"synthetic"`
	Ignored   bool       `json:"ignored"`
	Time      *partTime  `json:"time"`
	CallID    string     `json:"callID"`
	Tool      string     `json:"tool"`
	State     *toolState `json:"state"`
	Files     []string   `json:"files"`
	Hash      string     `json:"hash"`
	Auto      *bool      `json:"auto"`
	Overflow  bool       `json:"overflow"`
	Filename  string     `json:"filename"`
	Mime      string     `json:"mime"`
	URL       string     `json:"url"`
	// Tokens and Cost are a step-finish part's usage of the step.
	Tokens *tokens         `json:"tokens"`
	Cost   *float64        `json:"cost"`
	Raw    json.RawMessage `json:"-"`
}

type partTime struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

type toolState struct {
	Status string          `json:"status"`
	Input  json.RawMessage `json:"input"`
	Output string          `json:"output"`
	Title  string          `json:"title"`
	Error  string          `json:"error"`
}

// tokens is a message's token usage.
type tokens struct {
	Total     int64 `json:"total"`
	Input     int64 `json:"input"`
	Output    int64 `json:"output"`
	Reasoning int64 `json:"reasoning"`
	Cache     struct {
		Read  int64 `json:"read"`
		Write int64 `json:"write"`
	} `json:"cache"`
}

// messageInfo is the subset of a UserMessage or AssistantMessage the adapter
// reads.
type messageInfo struct {
	ID         string    `json:"id"`
	SessionID  string    `json:"sessionID"`
	Role       string    `json:"role"`
	ParentID   string    `json:"parentID"`
	Mode       string    `json:"mode"`
	Agent      string    `json:"agent"`
	Summary    any       `json:"summary"` // bool on assistant messages, an object on user messages
	ModelID    string    `json:"modelID"`
	ProviderID string    `json:"providerID"`
	Tokens     *tokens   `json:"tokens"`
	Finish     string    `json:"finish"`
	Error      *apiError `json:"error"`
	Time       struct {
		Created   int64 `json:"created"`
		Completed int64 `json:"completed"`
	} `json:"time"`
	Model *struct {
		ProviderID string `json:"providerID"`
		ModelID    string `json:"modelID"`
	} `json:"model"`
}

// isSummary reports whether the message is a compaction summary.
func (m messageInfo) isSummary() bool {
	b, ok := m.Summary.(bool)
	return ok && b || m.Mode == "compaction" && m.Role == "assistant"
}

// apiError is OpenCode's error envelope, {name, data:{message,…}}, used both
// in HTTP error bodies and inside messages and session.error events.
type apiError struct {
	Name string `json:"name"`
	Data struct {
		Message string `json:"message"`
	} `json:"data"`
}

// String renders the error as "Name: message".
func (e *apiError) String() string {
	if e == nil {
		return ""
	}
	switch {
	case e.Name != "" && e.Data.Message != "":
		return e.Name + ": " + e.Data.Message
	case e.Data.Message != "":
		return e.Data.Message
	}
	return e.Name
}

// decodePart decodes one part, keeping its raw JSON.
func decodePart(raw json.RawMessage) (part, error) {
	var p part
	if err := json.Unmarshal(raw, &p); err != nil {
		return part{}, err
	}
	p.Raw = append(json.RawMessage(nil), raw...)
	return p, nil
}

// editTools are the OpenCode tools whose input names a file they change.
var editTools = map[string]bool{"write": true, "edit": true, "multiedit": true}

// entry builds a NewEntry with a payload and native id.
func entry(kind core.Kind, nativeID string, payload any) core.NewEntry {
	return core.NewEntry{Kind: kind, Payload: core.Payload(payload), NativeID: nativeID}
}

// toolStarted is the tool.started entry of a tool part.
func toolStarted(p part) core.NewEntry {
	payload := core.ToolStartedPayload{ToolID: toolID(p), Name: p.Tool, PartID: p.ID, MessageID: p.MessageID}
	if p.State != nil && len(p.State.Input) > 0 && string(p.State.Input) != "{}" {
		payload.Input = p.State.Input
	}
	return entry(core.KindToolStarted, p.ID+":started", payload)
}

// toolCompleted is the tool.completed entry of a finished tool part.
func toolCompleted(p part) core.NewEntry {
	payload := core.ToolCompletedPayload{ToolID: toolID(p), Name: p.Tool, PartID: p.ID,
		MessageID: p.MessageID, Status: p.State.Status, Title: p.State.Title}
	// The error or the output is written even when empty.
	if p.State.Status == "error" {
		payload.Error = p.State.Error
	} else {
		payload.Output = p.State.Output
	}
	return entry(core.KindToolCompleted, p.ID+":completed", payload)
}

func toolID(p part) string {
	if p.CallID != "" {
		return p.CallID
	}
	return p.ID
}

// toolArtifacts returns artifact.created entries for a completed edit tool
// (the file named by input.filePath).
func toolArtifacts(p part) []core.NewEntry {
	if !editTools[p.Tool] || p.State == nil || p.State.Status != "completed" {
		return nil
	}
	var in struct {
		FilePath string `json:"filePath"`
	}
	if json.Unmarshal(p.State.Input, &in) != nil || in.FilePath == "" {
		return nil
	}
	return []core.NewEntry{entry(core.KindArtifactCreated, p.ID+":artifact",
		core.ArtifactCreatedPayload{Path: in.FilePath, Tool: p.Tool, ToolID: toolID(p)})}
}

// patchArtifacts returns one artifact.created entry per file of a patch
// part (the files a step changed).
func patchArtifacts(p part) []core.NewEntry {
	var out []core.NewEntry
	for _, f := range p.Files {
		if f == "" || strings.HasPrefix(f, "[") {
			continue
		}
		out = append(out, entry(core.KindArtifactCreated, p.ID+":"+f,
			core.ArtifactCreatedPayload{Path: f, Hash: p.Hash, PartID: p.ID}))
	}
	return out
}

// finishedText reports whether a text part is complete (its time.end set,
// or no timing at all as in stored user parts).
func finishedText(p part) bool {
	return p.Time == nil || p.Time.End > 0
}

// compacted builds the context.compacted entry from the compaction part
// (nil when never seen), the summary message (nil when unknown) and its text.
func compacted(cp *part, summary *messageInfo, summaryText, fallbackID string, raw compactedRaw) core.NewEntry {
	c := core.Compacted{Harness: harnessName, Trigger: core.TriggerUnknown, NativeID: fallbackID}
	if cp != nil {
		c.NativeID = cp.ID
		if cp.Auto != nil {
			if *cp.Auto {
				c.Trigger = core.TriggerAuto
			} else {
				c.Trigger = core.TriggerManual
			}
		}
		raw.CompactionPart = cp.Raw
	}
	if summary != nil {
		if summary.Tokens != nil && summary.Tokens.Input > 0 {
			n := summary.Tokens.Input
			c.PreTokens = &n
		}
		raw.SummaryMessageID = summary.ID
		raw.SummaryTokens = summary.Tokens
	}
	c.Summary = strings.TrimSpace(summaryText)
	c.Raw = core.Payload(raw)
	return c.Entry()
}

// harnessEvent keeps an event or part Bridge has no mapping for, whole.
func harnessEvent(nativeID, typ string, raw json.RawMessage) core.NewEntry {
	payload := core.HarnessEventPayload{Type: typ}
	if len(raw) > 0 {
		payload.Raw = raw
	}
	return entry(core.KindHarnessEvent, nativeID, payload)
}

// modelName joins provider and model ids as OpenCode spells them.
func modelName(provider, model string) string {
	if provider == "" {
		return model
	}
	if model == "" {
		return ""
	}
	return provider + "/" + model
}

// splitModel splits "provider/model"; a bare name has no provider.
func splitModel(s string) (provider, model string) {
	if i := strings.Index(s, "/"); i > 0 {
		return s[:i], s[i+1:]
	}
	return "", s
}
