package claudecode

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// Harness is the name this adapter reports.
const Harness = "claude-code"

// streamMsg is the union of the stream-json (snake_case) message fields the
// adapter reads. Unknown fields are ignored; the raw line is kept where it
// matters.
type streamMsg struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	SessionID       string          `json:"session_id"`
	UUID            string          `json:"uuid"`
	Model           string          `json:"model"`
	Cwd             string          `json:"cwd"`
	Message         *apiMessage     `json:"message"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	IsReplay        bool            `json:"isReplay"`
	Error           json.RawMessage `json:"error"`
	// result
	IsError    bool            `json:"is_error"`
	Result     string          `json:"result"`
	Errors     []string        `json:"errors"`
	StopReason *string         `json:"stop_reason"`
	Usage      json.RawMessage `json:"usage"`
	NumTurns   int             `json:"num_turns"`
	CostUSD    float64         `json:"total_cost_usd"`
	DurationMS int64           `json:"duration_ms"`
	// SinceLastResult is the turn's usage per model (usage.go).
	SinceLastResult map[string]modelUsage `json:"model_usage_since_last_result"`
	// system/status
	Status        *string `json:"status"`
	CompactResult string  `json:"compact_result"`
	CompactError  string  `json:"compact_error"`
	// system/compact_boundary
	CompactMetadata *compactMeta `json:"compact_metadata"`
	// system/session_title_changed
	Title string `json:"title"`
	// control_request / control_response
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  *controlResp    `json:"response"`
}

// apiMessage is an Anthropic Messages API message as Claude Code prints it.
type apiMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   json.RawMessage `json:"usage"`
}

// block is one content block.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	raw       json.RawMessage // the block as received
}

// compactMeta holds compact_metadata (stream) or compactMetadata (disk);
// both spellings are read.
type compactMeta struct {
	Trigger     string `json:"trigger"`
	PreTokens   *int64 `json:"pre_tokens"`
	PostTokens  *int64 `json:"post_tokens"`
	PreTokensC  *int64 `json:"preTokens"`
	PostTokensC *int64 `json:"postTokens"`
	UserContext string `json:"user_context"`
}

// controlResp is the response member of a control_response line.
type controlResp struct {
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response"`
	Error     string          `json:"error"`
}

// Block types whose mapping never reads the block's raw bytes: for these
// contentBlocks may decode the whole array in one pass (assistantEvents,
// userEvents; flattenText reads only text).
var (
	assistantPlain = map[string]bool{"text": true, "tool_use": true, "thinking": true, "redacted_thinking": true}
	userPlain      = map[string]bool{"text": true, "tool_result": true}
)

// contentBlocks decodes a content member that is either a string (one text
// block) or an array of blocks. When plain is nil or names every block's
// type, the array is decoded in one pass and the blocks' raw bytes are not
// kept; otherwise (or when any block fails to decode) each block is decoded
// on its own and keeps its raw bytes, one that does not decode becoming an
// "invalid" block. Both ways give the same decoded fields.
func contentBlocks(raw json.RawMessage, plain map[string]bool) []block {
	if len(raw) == 0 {
		return nil
	}
	// Content is a string or an array of blocks: look at its first byte
	// rather than trying to decode it as a string first (a failed decode
	// still scans the whole array).
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 && (t[0] == '"' || t[0] == 'n') {
		var s string
		if err := unmarshal(raw, &s); err == nil {
			return []block{{Type: "text", Text: s}}
		}
		return nil
	}
	var fast []block
	if unmarshal(raw, &fast) == nil {
		ok := true
		for i := range fast {
			if plain != nil && !plain[fast[i].Type] {
				ok = false
				break
			}
		}
		if ok {
			return fast
		}
	}
	var raws []json.RawMessage
	if err := unmarshal(raw, &raws); err != nil {
		return nil
	}
	bs := make([]block, 0, len(raws))
	for _, r := range raws {
		var b block
		if unmarshal(r, &b) != nil {
			b = block{Type: "invalid"}
		}
		b.raw = r
		bs = append(bs, b)
	}
	return bs
}

// flattenText joins the text of a tool_result's content (string or blocks).
func flattenText(raw json.RawMessage) string {
	return blocksText(contentBlocks(raw, nil))
}

// blocksText joins the text of the text blocks of bs.
func blocksText(bs []block) string {
	if len(bs) == 1 && bs[0].Type == "text" {
		return bs[0].Text
	}
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// lineID is a stable identifier for a line that carries no uuid: a hash of
// its bytes, so the same line is recorded once.
func lineID(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:12])
}

// msgID is the native id of a whole message: its uuid, else its hash.
func msgID(uuid string, raw []byte) string {
	if uuid != "" {
		return uuid
	}
	return lineID(raw)
}

// entry builds a NewEntry from a payload map.
// entryOf builds a NewEntry from a payload struct.
func entryOf(kind core.Kind, nativeID string, payload any) *core.NewEntry {
	return &core.NewEntry{Kind: kind, Payload: core.Payload(payload), NativeID: nativeID}
}

// harnessEvent keeps a line Bridge has no mapping for, whole.
func harnessEvent(typ string, nativeID string, raw []byte) *core.NewEntry {
	p := core.HarnessEventPayload{Type: typ}
	if json.Valid(raw) {
		p.Raw = json.RawMessage(raw)
	} else {
		p.Line = string(raw)
	}
	return entryOf(core.KindHarnessEvent, nativeID, p)
}

// compacted builds the context.compacted payload from a boundary's metadata.
func compacted(nativeID string, m *compactMeta, raw []byte) core.Compacted {
	c := core.Compacted{Harness: Harness, Trigger: core.TriggerUnknown, NativeID: nativeID, Raw: append(json.RawMessage(nil), raw...)}
	if m == nil {
		return c
	}
	switch t := core.CompactionTrigger(m.Trigger); t {
	case core.TriggerManual, core.TriggerAuto:
		c.Trigger = t
	}
	c.PreTokens = m.PreTokens
	if c.PreTokens == nil {
		c.PreTokens = m.PreTokensC
	}
	c.PostTokens = m.PostTokens
	if c.PostTokens == nil {
		c.PostTokens = m.PostTokensC
	}
	if m.UserContext != "" {
		c.Focus = m.UserContext
	}
	return c
}

// mapStream turns one stream-json line, already decoded into m, into the
// events to deliver. It never fails: anything it cannot map is kept as a
// harness.event entry.
func mapStream(m *streamMsg, raw []byte) []core.Event {
	id := msgID(m.UUID, raw)
	switch m.Type {
	case "system":
		return mapSystem(m, id, raw)
	case "assistant":
		if m.Message == nil {
			return []core.Event{{Entry: harnessEvent("assistant", id, raw)}}
		}
		return assistantEvents(m.Message, id, m.ParentToolUseID, m.Error)
	case "user":
		if m.Message == nil {
			return []core.Event{{Entry: harnessEvent("user", id, raw)}}
		}
		return userEvents(m.Message, id, m.IsReplay, false)
	case "result":
		p := core.StatusPayload{Status: "turn_completed", Subtype: m.Subtype, IsError: &m.IsError,
			NumTurns: &m.NumTurns, CostUSD: &m.CostUSD, DurationMs: &m.DurationMS}
		if m.IsError {
			p.Status = "turn_failed"
		}
		if m.StopReason != nil {
			p.StopReason = *m.StopReason
		}
		if len(m.Usage) > 0 && json.Valid(m.Usage) {
			p.Usage = m.Usage
		}
		if len(m.Errors) > 0 {
			p.Errors = m.Errors
		}
		if m.Result != "" {
			p.Result = m.Result
		}
		return append([]core.Event{{Entry: entryOf(core.KindSessionStatus, id, p)}}, turnUsage(m, id, m.Model)...)
	case "control_response", "control_request", "control_cancel_request", "keep_alive", "stream_event":
		return nil
	}
	typ := m.Type
	if typ == "" {
		typ = "unknown"
	}
	if m.Subtype != "" {
		typ += "/" + m.Subtype
	}
	return []core.Event{{Entry: harnessEvent(typ, id, raw)}}
}

// mapSystem maps system/* lines.
func mapSystem(m *streamMsg, id string, raw []byte) []core.Event {
	switch m.Subtype {
	case "init":
		return []core.Event{{NativeSessionID: m.SessionID, Model: m.Model}}
	case "compact_boundary":
		c := compacted(id, m.CompactMetadata, raw)
		e := c.Entry()
		return []core.Event{{Entry: &e}}
	case "status":
		p := core.StatusPayload{Status: "running", CompactResult: m.CompactResult}
		if m.Status != nil && *m.Status != "" {
			p.Status = *m.Status
		}
		if m.CompactResult != "" && (m.Status == nil || *m.Status == "") {
			p.Status = "compact_" + m.CompactResult
		}
		if m.CompactError != "" {
			p.CompactError = m.CompactError
		}
		return []core.Event{{Entry: entryOf(core.KindSessionStatus, id, p)}}
	}
	typ := "system"
	if m.Subtype != "" {
		typ += "/" + m.Subtype
	}
	return []core.Event{{Entry: harnessEvent(typ, id, raw)}}
}

// assistantEvents maps an assistant message's blocks; block i of message id
// gets native id "id:i".
func assistantEvents(msg *apiMessage, id string, parentTool *string, apiErr json.RawMessage) []core.Event {
	var out []core.Event
	for i, b := range contentBlocks(msg.Content, assistantPlain) {
		nid := id + ":" + strconv.Itoa(i)
		var e *core.NewEntry
		switch b.Type {
		case "text":
			p := core.AssistantMessagePayload{Text: b.Text, Model: msg.Model, MessageID: msg.ID}
			if len(apiErr) > 0 && string(apiErr) != "null" && json.Valid(apiErr) {
				p.Error = apiErr
			}
			e = entryOf(core.KindAssistantMessage, nid, p)
		case "tool_use":
			p := core.ToolStartedPayload{ToolID: b.ID, Name: b.Name}
			if len(b.Input) > 0 && json.Valid(b.Input) {
				p.Input = b.Input
			}
			e = entryOf(core.KindToolStarted, nid, p)
		case "thinking", "redacted_thinking":
			e = entryOf(core.KindHarnessEvent, nid, core.HarnessEventPayload{Text: b.Thinking, Type: "assistant/" + b.Type})
		default:
			e = entryOf(core.KindHarnessEvent, nid, core.HarnessEventPayload{Type: "assistant/" + b.Type, Block: b.raw})
		}
		if parentTool != nil && *parentTool != "" {
			addField(e, "parentToolUseId", *parentTool)
		}
		out = append(out, core.Event{Entry: e})
	}
	return out
}

// planOf reads a plan update from a successful call of Claude Code's plan
// tools, from its input and its result text: TodoWrite (the whole list:
// todos [{content, status}]), TaskCreate (one new pending task: subject;
// the result "Task #N created" gives its id) and TaskUpdate (one task's
// change: taskId, status; the result "Updated task #N …"). Other tools,
// inputs that do not parse and results that say nothing changed ("Task not
// found") are not plan updates.
func planOf(name string, input json.RawMessage, result string) (core.Plan, bool) {
	switch name {
	case "TodoWrite":
		var in struct {
			Todos []struct {
				ID      string `json:"id"`
				Content string `json:"content"`
				Status  string `json:"status"`
			} `json:"todos"`
		}
		if json.Unmarshal(input, &in) != nil || in.Todos == nil {
			return core.Plan{}, false
		}
		p := core.Plan{Source: name, Steps: []core.PlanStep{}}
		for _, t := range in.Todos {
			p.Steps = append(p.Steps, core.PlanStep{ID: t.ID, Text: t.Content, Status: core.NormalizePlanStatus(t.Status)})
		}
		return p, true
	case "TaskCreate":
		var in struct {
			Subject string `json:"subject"`
		}
		id, ok := taskNumber(result, "Task #")
		if json.Unmarshal(input, &in) != nil || strings.TrimSpace(in.Subject) == "" || !ok {
			return core.Plan{}, false
		}
		return core.Plan{Source: name, Partial: true, Steps: []core.PlanStep{{ID: id, Text: in.Subject, Status: core.PlanPending}}}, true
	case "TaskUpdate":
		var in struct {
			TaskID  string `json:"taskId"`
			Subject string `json:"subject"`
			Status  string `json:"status"`
		}
		if json.Unmarshal(input, &in) != nil || in.TaskID == "" || in.Status == "" {
			return core.Plan{}, false
		}
		if _, ok := taskNumber(result, "Updated task #"); !ok {
			return core.Plan{}, false
		}
		return core.Plan{Source: name, Partial: true, Steps: []core.PlanStep{{ID: in.TaskID, Text: in.Subject, Status: core.NormalizePlanStatus(in.Status)}}}, true
	}
	return core.Plan{}, false
}

// planTools are the tools planOf reads.
var planTools = map[string]bool{"TodoWrite": true, "TaskCreate": true, "TaskUpdate": true}

// taskNumber reads the task number after prefix at the start of a tool
// result ("Task #12 created…" with prefix "Task #" is "12").
func taskNumber(result, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(result), prefix)
	if !ok {
		return "", false
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 {
		return "", false
	}
	return rest[:n], true
}

// userEvents maps a user message: tool results become tool.completed;
// text the harness replays (local command output, the compaction summary)
// becomes a harness.event, since the user did not type it; other text is a
// user.message (transcripts, where the prompts themselves are stored).
func userEvents(msg *apiMessage, id string, replay, compactSummary bool) []core.Event {
	return userBlockEvents(contentBlocks(msg.Content, userPlain), id, replay, compactSummary)
}

// userBlockEvents is userEvents for content already decoded by
// contentBlocks(…, userPlain).
func userBlockEvents(blocks []block, id string, replay, compactSummary bool) []core.Event {
	var out []core.Event
	for i, b := range blocks {
		nid := id + ":" + strconv.Itoa(i)
		switch b.Type {
		case "tool_result":
			p := core.ToolCompletedPayload{IsError: b.IsError, Output: flattenText(b.Content), ToolID: b.ToolUseID}
			out = append(out, core.Event{Entry: entryOf(core.KindToolCompleted, nid, p)})
		case "text":
			switch {
			case compactSummary || strings.HasPrefix(b.Text, "This session is being continued from a previous conversation"):
				out = append(out, core.Event{Entry: entryOf(core.KindHarnessEvent, nid, core.HarnessEventPayload{Text: b.Text, Type: "compact_summary"})})
			case replay || isLocalCommandText(b.Text):
				out = append(out, core.Event{Entry: entryOf(core.KindHarnessEvent, nid, core.HarnessEventPayload{Text: b.Text, Type: "local_command"})})
			default:
				out = append(out, core.Event{Entry: entryOf(core.KindUserMessage, nid, core.UserMessagePayload{Text: b.Text})})
			}
		default:
			out = append(out, core.Event{Entry: entryOf(core.KindHarnessEvent, nid, core.HarnessEventPayload{Type: "user/" + b.Type, Block: b.raw})})
		}
	}
	return out
}

// isLocalCommandText reports text Claude Code writes around local slash
// commands, which no person typed as such.
func isLocalCommandText(t string) bool {
	return strings.HasPrefix(t, "<local-command-") || strings.HasPrefix(t, "<command-name>")
}

// addField sets one more payload member on e.
func addField(e *core.NewEntry, k string, v any) {
	var p map[string]any
	if json.Unmarshal(e.Payload, &p) != nil || p == nil {
		return
	}
	p[k] = v
	e.Payload = core.Payload(p)
}
