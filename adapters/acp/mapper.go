package acp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// mapMode says what a mapper does with what it reads.
type mapMode int

const (
	// modeLive maps a running session's updates to entries.
	modeLive mapMode = iota
	// modeSilent learns state (commands, usage) but emits no entries: a
	// session/load replay of history the record already holds.
	modeSilent
	// modeHistory maps a session/load replay to entries, user messages
	// included (History).
	modeHistory
)

// command is one entry of available_commands_update.
type command struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Input       json.RawMessage `json:"input,omitempty"`
}

// hint returns the command's unstructured input hint, and whether the
// command takes input at all.
func (c command) hint() (string, bool) {
	if !present(c.Input) {
		return "", false
	}
	var in struct {
		Hint string `json:"hint"`
	}
	_ = json.Unmarshal(c.Input, &in)
	return in.Hint, true
}

// mapper turns session/update notifications into Bridge events. It is pure
// (no I/O) and not safe for concurrent use: the live session guards it.
//
// Mapping:
//   - agent_message_chunk text is accumulated into one assistant.message per
//     message (flushed by any other update, a new messageId, or the turn's
//     end); agent_thought_chunk likewise into one harness.event "agent_thought".
//   - tool_call -> tool.started; tool_call_update with status completed or
//     failed -> tool.completed (a tool_call that arrives already terminal
//     yields both).
//   - usage_update -> a Gauge {used, size}; the reading is remembered for
//     compaction token counts.
//   - compaction_update completed -> exactly one context.compacted (trigger
//     unknown: ACP does not say), preTokens the last used reading before
//     the compaction began, postTokens the next usage_update after it; the
//     entry waits for that reading or the end of the turn.
//   - available_commands_update is remembered (a compact command means the
//     agent compacts by itself) and records nothing.
//   - anything else (plan, mode and config updates, user chunks outside a
//     replay, failed compactions, unknown kinds) is kept whole as a
//     harness.event; a malformed update is kept too and never fatal.
type mapper struct {
	harness   string
	sessionID string
	nonce     string
	seq       int
	mode      mapMode

	text, thought, user strings.Builder
	messageID           string

	used, size int64
	haveUsage  bool
	// cost is the last usage_update's cumulative US-dollar cost, costBase
	// its value when the previous turn ended (usage.go).
	cost, costBase float64
	haveCost       bool
	sawGauge       bool
	sawCompaction  bool // a compaction_update arrived

	commands      []command
	haveCommands  bool
	started       map[string]bool
	finished      map[string]bool
	edits         map[string][]string // files of open tool calls of kind edit
	toolKinds     map[string]string   // tool call id -> ACP tool kind (permission requests may omit it)
	compactions   map[string]*compactionState
	pendingCompct *core.Compacted
}

type compactionState struct {
	pre     *int64
	summary strings.Builder
}

func newMapper(harness, sessionID, nonce string, mode mapMode) *mapper {
	return &mapper{harness: harness, sessionID: sessionID, nonce: nonce, mode: mode,
		started: map[string]bool{}, finished: map[string]bool{}, edits: map[string][]string{},
		compactions: map[string]*compactionState{}, toolKinds: map[string]string{}}
}

// nativeID returns a fresh id, unique across processes (nonce) and within
// this mapper (seq).
func (m *mapper) nativeID(what string) string {
	m.seq++
	return fmt.Sprintf("acp:%s:%d:%s", m.nonce, m.seq, what)
}

func (m *mapper) entry(kind core.Kind, what string, payload any) core.Event {
	return core.Event{Entry: &core.NewEntry{Kind: kind, Payload: core.Payload(payload), NativeID: m.nativeID(what)}}
}

// harnessEvent keeps an update Bridge has no mapping for.
func (m *mapper) harnessEvent(typ string, raw json.RawMessage) core.Event {
	p := core.HarnessEventPayload{Type: typ}
	if json.Valid(raw) {
		p.Raw = raw
	} else {
		p.Line = string(raw)
	}
	return m.entry(core.KindHarnessEvent, "event", p)
}

// emitting reports whether entries of this kind are recorded in the mode.
func (m *mapper) emitting() bool { return m.mode != modeSilent }

// update maps one session/update's update object.
func (m *mapper) update(raw json.RawMessage) []core.Event {
	var head struct {
		SessionUpdate string `json:"sessionUpdate"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.SessionUpdate == "" {
		out := m.flush()
		if m.emitting() {
			out = append(out, m.harnessEvent("malformed_update", raw))
		}
		return out
	}
	switch head.SessionUpdate {
	case "agent_message_chunk", "agent_thought_chunk", "user_message_chunk":
		return m.chunk(head.SessionUpdate, raw)
	case "usage_update":
		return m.usage(raw)
	case "available_commands_update":
		var u struct {
			AvailableCommands []command `json:"availableCommands"`
		}
		if err := json.Unmarshal(raw, &u); err == nil {
			m.commands, m.haveCommands = u.AvailableCommands, true
			return nil
		}
	case "compaction_update":
		return m.compaction(raw)
	case "compaction_summary_chunk":
		var u struct {
			CompactionID string       `json:"compactionId"`
			Content      contentBlock `json:"content"`
		}
		if err := json.Unmarshal(raw, &u); err == nil {
			m.compactionState(u.CompactionID).summary.WriteString(u.Content.Text)
			return nil
		}
	case "tool_call", "tool_call_update":
		return m.tool(head.SessionUpdate, raw)
	case "plan":
		var u struct {
			Entries []struct {
				Content string `json:"content"`
				Status  string `json:"status"`
			} `json:"entries"`
		}
		if err := json.Unmarshal(raw, &u); err == nil && u.Entries != nil {
			out := m.flush()
			if !m.emitting() {
				return out
			}
			plan := core.Plan{Source: "plan", Steps: []core.PlanStep{}}
			for _, e := range u.Entries {
				plan.Steps = append(plan.Steps, core.PlanStep{Text: e.Content, Status: core.NormalizePlanStatus(e.Status)})
			}
			return append(out, m.entry(core.KindPlanUpdated, "plan", plan))
		}
	}
	out := m.flush()
	if m.emitting() {
		out = append(out, m.harnessEvent(head.SessionUpdate, raw))
	}
	return out
}

func (m *mapper) chunk(kind string, raw json.RawMessage) []core.Event {
	var u struct {
		Content   contentBlock `json:"content"`
		MessageID string       `json:"messageId"`
	}
	if err := json.Unmarshal(raw, &u); err != nil || u.Content.Type != "text" {
		out := m.flush()
		if m.emitting() {
			out = append(out, m.harnessEvent(kind, raw))
		}
		return out
	}
	var out []core.Event
	if u.MessageID != "" && u.MessageID != m.messageID {
		out = m.flush()
		m.messageID = u.MessageID
	}
	switch kind {
	case "agent_message_chunk":
		if m.thought.Len() > 0 || m.user.Len() > 0 {
			out = append(out, m.flush()...)
		}
		m.text.WriteString(u.Content.Text)
	case "agent_thought_chunk":
		if m.text.Len() > 0 || m.user.Len() > 0 {
			out = append(out, m.flush()...)
		}
		m.thought.WriteString(u.Content.Text)
	case "user_message_chunk":
		if m.text.Len() > 0 || m.thought.Len() > 0 {
			out = append(out, m.flush()...)
		}
		if m.mode == modeHistory {
			// A replay sends each stored user message as its own chunk run;
			// keep them apart when no messageId says otherwise.
			if m.user.Len() > 0 && u.MessageID == "" {
				out = append(out, m.flush()...)
			}
			m.user.WriteString(u.Content.Text)
		} else if m.mode == modeLive {
			// The service records the prompt itself: an echo is kept as
			// data, never as a second user.message.
			out = append(out, m.harnessEvent(kind, raw))
		}
	}
	return out
}

// flush ends the message being accumulated, if any.
func (m *mapper) flush() []core.Event {
	var out []core.Event
	if m.emitting() {
		if s := m.user.String(); strings.TrimSpace(s) != "" {
			out = append(out, m.entry(core.KindUserMessage, "user", core.UserMessagePayload{Text: s}))
		}
		if s := m.thought.String(); strings.TrimSpace(s) != "" {
			out = append(out, m.entry(core.KindHarnessEvent, "thought", core.HarnessEventPayload{Type: "agent_thought", Text: s}))
		}
		if s := m.text.String(); strings.TrimSpace(s) != "" {
			out = append(out, m.entry(core.KindAssistantMessage, "assistant",
				core.AssistantMessagePayload{Text: s, MessageID: m.messageID}))
		}
	}
	m.user.Reset()
	m.thought.Reset()
	m.text.Reset()
	m.messageID = ""
	return out
}

// endTurn flushes what a finished turn left open: the last message and a
// completed compaction still waiting for its post-compaction reading.
func (m *mapper) endTurn() []core.Event {
	out := m.flush()
	return append(out, m.emitCompaction()...)
}

func (m *mapper) usage(raw json.RawMessage) []core.Event {
	var u struct {
		Used *int64     `json:"used"`
		Size int64      `json:"size"`
		Cost *usageCost `json:"cost"`
	}
	if err := json.Unmarshal(raw, &u); err != nil || u.Used == nil {
		if m.emitting() {
			return []core.Event{m.harnessEvent("usage_update", raw)}
		}
		return nil
	}
	m.used, m.size, m.haveUsage, m.sawGauge = *u.Used, u.Size, true, true
	m.noteCost(u.Cost)
	var out []core.Event
	if m.pendingCompct != nil {
		post := *u.Used
		m.pendingCompct.PostTokens = &post
		out = append(out, m.emitCompaction()...)
	}
	return append(out, core.Event{Gauge: &core.Gauge{Used: *u.Used, Size: u.Size}})
}

func (m *mapper) compactionState(id string) *compactionState {
	st := m.compactions[id]
	if st == nil {
		st = &compactionState{}
		if m.haveUsage {
			pre := m.used
			st.pre = &pre
		}
		m.compactions[id] = st
	}
	return st
}

func (m *mapper) compaction(raw json.RawMessage) []core.Event {
	var u struct {
		CompactionID string          `json:"compactionId"`
		Status       string          `json:"status"`
		Summary      []contentBlock  `json:"summary"`
		Error        json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		if m.emitting() {
			return []core.Event{m.harnessEvent("compaction_update", raw)}
		}
		return nil
	}
	m.sawCompaction = true
	out := m.flush()
	st := m.compactionState(u.CompactionID)
	switch u.Status {
	case "completed":
		out = append(out, m.emitCompaction()...) // an earlier one still waiting
		summary := st.summary.String()
		if len(u.Summary) > 0 {
			var b strings.Builder
			for _, c := range u.Summary {
				b.WriteString(c.Text)
			}
			summary = b.String()
		}
		nid := m.nativeID("compaction")
		if u.CompactionID != "" {
			nid = "acp:" + m.sessionID + ":compaction:" + u.CompactionID
		}
		c := &core.Compacted{Harness: m.harness, Trigger: core.TriggerUnknown, PreTokens: st.pre,
			NativeID: nid, Summary: summary, Raw: append(json.RawMessage(nil), raw...)}
		delete(m.compactions, u.CompactionID)
		m.pendingCompct = c
	case "in_progress":
		// Nothing to record yet; the state holds the pre-compaction reading.
	default: // failed, cancelled, or a status of a newer protocol
		delete(m.compactions, u.CompactionID)
		if m.emitting() {
			out = append(out, m.harnessEvent("compaction_update", raw))
		}
	}
	return out
}

// emitCompaction records the completed compaction waiting for its reading.
func (m *mapper) emitCompaction() []core.Event {
	c := m.pendingCompct
	m.pendingCompct = nil
	if c == nil || !m.emitting() {
		return nil
	}
	e := c.Entry()
	return []core.Event{{Entry: &e}}
}

func (m *mapper) tool(kind string, raw json.RawMessage) []core.Event {
	var u struct {
		ToolCallID string          `json:"toolCallId"`
		Title      string          `json:"title"`
		Kind       string          `json:"kind"`
		Status     string          `json:"status"`
		RawInput   json.RawMessage `json:"rawInput,omitempty"`
		RawOutput  json.RawMessage `json:"rawOutput,omitempty"`
		Content    json.RawMessage `json:"content,omitempty"`
		Locations  []struct {
			Path string `json:"path"`
		} `json:"locations,omitempty"`
	}
	out := m.flush()
	if err := json.Unmarshal(raw, &u); err != nil || u.ToolCallID == "" {
		if m.emitting() {
			out = append(out, m.harnessEvent(kind, raw))
		}
		return out
	}
	if u.Kind != "" {
		m.toolKinds[u.ToolCallID] = u.Kind
	}
	if !m.emitting() {
		return out
	}
	if !m.started[u.ToolCallID] {
		m.started[u.ToolCallID] = true
		p := core.ToolStartedPayload{ToolID: u.ToolCallID, Title: u.Title, ToolKind: u.Kind, Status: u.Status}
		if present(u.RawInput) {
			p.Input = u.RawInput
		}
		out = append(out, m.entry(core.KindToolStarted, "tool-start", p))
		if u.Kind == "edit" {
			m.edits[u.ToolCallID] = []string{}
		}
	}
	if files, ok := m.edits[u.ToolCallID]; ok {
		for _, l := range u.Locations {
			files = appendPath(files, l.Path)
		}
		for _, p := range diffPaths(u.Content) {
			files = appendPath(files, p)
		}
		m.edits[u.ToolCallID] = files
	}
	if (u.Status == "completed" || u.Status == "failed") && !m.finished[u.ToolCallID] {
		m.finished[u.ToolCallID] = true
		p := core.ToolCompletedPayload{ToolID: u.ToolCallID, Status: u.Status, Title: u.Title}
		if present(u.RawOutput) {
			p.Output = u.RawOutput
		}
		if present(u.Content) {
			p.Content = u.Content
		}
		out = append(out, m.entry(core.KindToolCompleted, "tool-done", p))
		if u.Status == "completed" {
			for _, f := range m.edits[u.ToolCallID] {
				out = append(out, m.entry(core.KindArtifactCreated, "artifact",
					core.ArtifactCreatedPayload{Path: f, ToolID: u.ToolCallID, ToolKind: "edit"}))
			}
		}
		delete(m.edits, u.ToolCallID)
	}
	return out
}

// diffPaths returns the paths of the diff items of a tool call's content.
func diffPaths(content json.RawMessage) []string {
	var items []struct {
		Type string `json:"type"`
		Path string `json:"path"`
	}
	if !present(content) || json.Unmarshal(content, &items) != nil {
		return nil
	}
	var out []string
	for _, it := range items {
		if it.Type == "diff" && it.Path != "" {
			out = append(out, it.Path)
		}
	}
	return out
}

func appendPath(list []string, p string) []string {
	if p == "" {
		return list
	}
	for _, x := range list {
		if x == p {
			return list
		}
	}
	return append(list, p)
}

// compactCommand returns the advertised compact command, if any.
func (m *mapper) compactCommand() (command, bool) {
	for _, c := range m.commands {
		if c.Name == "compact" {
			return c, true
		}
	}
	return command{}, false
}
