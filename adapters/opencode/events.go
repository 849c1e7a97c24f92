package opencode

import (
	"encoding/json"

	"github.com/bridge-dev/bridge/core"
)

// quietEvents are bus events the adapter knows and deliberately does not
// record: bookkeeping, deltas already folded into parts, and the turn
// signals handled by the live session itself.
var quietEvents = map[string]bool{
	"server.connected": true, "server.heartbeat": true, "server.instance.disposed": true,
	"session.created": true, "session.updated": true, "session.deleted": true,
	"session.diff": true, "session.idle": true, "message.part.delta": true,
	"message.removed": true, "message.part.removed": true, "file.edited": true,
	"file.watcher.updated": true, "plugin.added": true, "catalog.updated": true,
	"reference.updated": true, "integration.updated": true, "project.updated": true,
	"lsp.updated": true, "lsp.client.diagnostics": true, "installation.updated": true,
	"vcs.branch.updated": true,
}

// quietParts are part types that are pure bookkeeping.
var quietParts = map[string]bool{"step-start": true, "snapshot": true}

// eventMapper turns the bus events of one session into core events. It is
// not safe for concurrent use; the event stream calls it from one goroutine.
type eventMapper struct {
	sessionID     string
	messages      map[string]*messageInfo
	pendingText   map[string][]part // finished text parts of messages not yet described
	emitted       map[string]bool
	started       map[string]bool
	compaction    *part
	summary       *messageInfo
	summaryText   map[string]string
	lastAssistant string
	model         string
	// limit, when set, gives a model's context window ("provider/model");
	// 0 when unknown. With it, each finished assistant step reports a
	// context gauge.
	limit  func(model string) int64
	gauged map[string]bool
}

func newEventMapper(sessionID string) *eventMapper {
	return &eventMapper{
		sessionID:   sessionID,
		messages:    map[string]*messageInfo{},
		pendingText: map[string][]part{},
		emitted:     map[string]bool{},
		started:     map[string]bool{},
		summaryText: map[string]string{},
		gauged:      map[string]bool{},
	}
}

// gauge reads a finished assistant step's token usage against its model's
// context window, counted as OpenCode counts it for its own overflow check
// (input + cache read + output); nil when either is unknown.
func (m *eventMapper) gauge(info messageInfo) *core.Gauge {
	if m.limit == nil || info.Role != "assistant" || info.isSummary() || info.Tokens == nil ||
		(info.Time.Completed == 0 && info.Finish == "") || m.gauged[info.ID] {
		return nil
	}
	used := info.Tokens.Input + info.Tokens.Cache.Read + info.Tokens.Output
	if used <= 0 {
		return nil
	}
	size := m.limit(modelName(info.ProviderID, info.ModelID))
	if size <= 0 {
		return nil
	}
	m.gauged[info.ID] = true
	return &core.Gauge{Used: used, Size: size}
}

// handle maps one event of this session; it never fails: what it cannot
// read is kept as a harness.event entry.
func (m *eventMapper) handle(ev event) []core.Event {
	switch ev.Type {
	case "message.updated":
		return m.messageUpdated(ev)
	case "message.part.updated":
		var p struct {
			Part json.RawMessage `json:"part"`
		}
		if err := json.Unmarshal(ev.Properties, &p); err != nil || len(p.Part) == 0 {
			return m.keep(nil, ev)
		}
		pt, err := decodePart(p.Part)
		if err != nil || pt.ID == "" {
			return m.keep(nil, ev)
		}
		return m.add(nil, m.partEntries(pt)...)
	case "session.idle":
		return m.sessionIdle()
	case "session.compacted":
		text := ""
		if m.summary != nil {
			text = m.summaryText[m.summary.ID]
		}
		out := m.add(nil, compacted(m.compaction, m.summary, text, nativeOr(ev.ID, ev.Type),
			compactedRaw{Event: ev.Raw}))
		m.compaction, m.summary = nil, nil
		return out
	case "session.error":
		return m.sessionError(ev)
	case "todo.updated":
		return m.todoUpdated(ev)
	case "session.status":
		return m.sessionStatus(ev)
	}
	if !quietEvents[ev.Type] {
		return m.keep(nil, ev)
	}
	return nil
}

// add appends the entries not emitted before (by native id) to out.
func (m *eventMapper) add(out []core.Event, entries ...core.NewEntry) []core.Event {
	for _, e := range entries {
		if e.NativeID != "" {
			if m.emitted[e.NativeID] {
				continue
			}
			m.emitted[e.NativeID] = true
		}
		e := e
		out = append(out, core.Event{Entry: &e})
	}
	return out
}

// keep appends the event, whole, as a harness.event entry.
func (m *eventMapper) keep(out []core.Event, ev event) []core.Event {
	return m.add(out, harnessEvent(nativeOr(ev.ID, ev.Type), ev.Type, ev.Raw))
}

// messageUpdated learns a message's description: an assistant message's
// model and context gauge, and the text parts that waited for it.
func (m *eventMapper) messageUpdated(ev event) []core.Event {
	var p struct {
		Info messageInfo `json:"info"`
	}
	if err := json.Unmarshal(ev.Properties, &p); err != nil || p.Info.ID == "" {
		return m.keep(nil, ev)
	}
	var out []core.Event
	info := p.Info
	m.messages[info.ID] = &info
	if info.Role == "assistant" {
		if info.isSummary() {
			m.summary = &info
		} else {
			m.lastAssistant = info.ID
		}
		if name := modelName(info.ProviderID, info.ModelID); name != "" && name != m.model {
			m.model = name
			out = append(out, core.Event{Model: name})
		}
		if g := m.gauge(info); g != nil {
			out = append(out, core.Event{Gauge: g})
		}
	}
	if pend := m.pendingText[info.ID]; len(pend) > 0 {
		delete(m.pendingText, info.ID)
		for _, tp := range pend {
			out = m.add(out, m.textEntries(tp)...)
		}
	}
	return out
}

// sessionIdle keeps the text of a message whose description never arrived
// (a dropped stream) as data rather than guessing it is the assistant's.
func (m *eventMapper) sessionIdle() []core.Event {
	var out []core.Event
	for id, pend := range m.pendingText {
		for _, tp := range pend {
			out = m.add(out, harnessEvent(tp.ID, "part.text", tp.Raw))
		}
		delete(m.pendingText, id)
	}
	return out
}

// sessionError records a turn's error (cancelled when it was aborted).
func (m *eventMapper) sessionError(ev event) []core.Event {
	var p struct {
		Error *apiError `json:"error"`
	}
	_ = json.Unmarshal(ev.Properties, &p)
	payload := core.StatusPayload{Status: "error", Raw: ev.Raw}
	if p.Error != nil {
		if p.Error.Name == "MessageAbortedError" {
			payload.Status = "cancelled"
		}
		payload.ErrorName = p.Error.Name
		payload.Message = p.Error.Data.Message
	}
	id := nativeOr(ev.ID, ev.Type)
	if m.lastAssistant != "" {
		id = m.lastAssistant + ":error"
	}
	return m.add(nil, entry(core.KindSessionStatus, id, payload))
}

// todoUpdated records the todo list as a plan.
func (m *eventMapper) todoUpdated(ev event) []core.Event {
	var p struct {
		Todos []struct {
			ID      string `json:"id"`
			Content string `json:"content"`
			Status  string `json:"status"`
		} `json:"todos"`
	}
	if err := json.Unmarshal(ev.Properties, &p); err != nil || p.Todos == nil {
		return m.keep(nil, ev)
	}
	plan := core.Plan{Source: ev.Type, Steps: []core.PlanStep{}}
	for _, t := range p.Todos {
		plan.Steps = append(plan.Steps, core.PlanStep{ID: t.ID, Text: t.Content, Status: core.NormalizePlanStatus(t.Status)})
	}
	return m.add(nil, plan.Entry(nativeOr(ev.ID, ev.Type)))
}

// sessionStatus records a retry; other statuses are the live session's.
func (m *eventMapper) sessionStatus(ev event) []core.Event {
	var p struct {
		Status struct {
			Type    string `json:"type"`
			Attempt int    `json:"attempt"`
			Message string `json:"message"`
		} `json:"status"`
	}
	if err := json.Unmarshal(ev.Properties, &p); err != nil {
		return m.keep(nil, ev)
	}
	if p.Status.Type != "retry" {
		return nil
	}
	return m.add(nil, entry(core.KindSessionStatus, nativeOr(ev.ID, ev.Type), core.StatusPayload{
		Status: "retry", Attempt: p.Status.Attempt, Message: p.Status.Message, Raw: ev.Raw}))
}

// partEntries maps one updated part.
func (m *eventMapper) partEntries(p part) []core.NewEntry {
	switch p.Type {
	case "text":
		if !finishedText(p) {
			return nil
		}
		if _, known := m.messages[p.MessageID]; !known {
			m.pendingText[p.MessageID] = append(m.pendingText[p.MessageID], p)
			return nil
		}
		return m.textEntries(p)
	case "tool":
		if p.State == nil {
			return []core.NewEntry{harnessEvent(p.ID, "part.tool", p.Raw)}
		}
		var out []core.NewEntry
		if !m.started[p.ID] {
			m.started[p.ID] = true
			out = append(out, toolStarted(p))
		}
		if p.State.Status == "completed" || p.State.Status == "error" {
			out = append(out, toolCompleted(p))
			out = append(out, toolArtifacts(p)...)
		}
		return out
	case "patch":
		return patchArtifacts(p)
	case "step-finish":
		return stepUsage(p, m.messages[p.MessageID], m.model)
	case "compaction":
		cp := p
		m.compaction = &cp
		return nil
	case "reasoning":
		if !finishedText(p) {
			return nil
		}
		return []core.NewEntry{harnessEvent(p.ID, "part.reasoning", p.Raw)}
	}
	if quietParts[p.Type] {
		return nil
	}
	return []core.NewEntry{harnessEvent(p.ID, "part."+p.Type, p.Raw)}
}

// textEntries maps a finished text part of a described message: assistant
// text becomes assistant.message; a summary message's text is kept for the
// context.compacted entry; user text is recorded by Bridge itself when it
// prompts, so it is not repeated here.
func (m *eventMapper) textEntries(p part) []core.NewEntry {
	info := m.messages[p.MessageID]
	if info == nil || info.Role != "assistant" || p.Text == "" || p.Ignored {
		return nil
	}
	if info.isSummary() {
		m.summaryText[info.ID] += p.Text
		return nil
	}
	return []core.NewEntry{entry(core.KindAssistantMessage, p.ID,
		core.AssistantMessagePayload{Text: p.Text, MessageID: p.MessageID, PartID: p.ID})}
}

func nativeOr(id, fallback string) string {
	if id != "" {
		return id
	}
	return fallback
}
