package codex

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"

	"github.com/bridge-dev/bridge/core"
)

// Harness is the adapter's harness name.
const Harness = "codex"

// maxToolOutput bounds the command output kept in a tool.completed payload.
const maxToolOutput = 8 << 10

// turnEnd is a turn/completed report.
type turnEnd struct {
	TurnID  string
	Status  string // completed | interrupted | failed
	Message string // the turn error's message, when failed
}

// mapOut is what one notification produced.
type mapOut struct {
	Events      []core.Event
	TurnStarted string
	TurnEnded   *turnEnd
	// Compacted is set when a contextCompaction item completed, with the
	// turn it belonged to.
	Compacted string
	// ManualTurn is set when a turn was identified as the one a pending
	// thread/compact/start started (its compaction item began).
	ManualTurn string
}

// mapper turns app-server notifications into Bridge events. It keeps the
// state compaction needs: the last token usage, which turns were started by
// thread/compact/start, and which compactions were already reported.
type mapper struct {
	mu              sync.Mutex
	manualPending   int
	manualTurns     map[string]bool
	lastTotal       *int64
	compPre         map[string]*int64 // contextCompaction item id -> usage at its start
	usageSince      map[string]bool   // item id -> a usage update arrived after its start
	itemCompactions map[string]int    // turn id -> contextCompaction items reported
	deprecatedTurns map[string]bool   // turn id -> reported from thread/compacted
	toolsStarted    map[string]bool
	activeTurn      string
	prompts         []string // texts sent by Prompt, not to be echoed back
	// afterCompaction is the native id of the last reported compaction
	// while Codex has not yet reported the next token count (the context's
	// size after it), which is then recorded as context.usage.
	afterCompaction string
	ledger          ledger // token totals, for each turn's usage.reported (usage.go)
}

func newMapper() *mapper {
	return &mapper{
		manualTurns: map[string]bool{}, compPre: map[string]*int64{}, usageSince: map[string]bool{},
		itemCompactions: map[string]int{}, deprecatedTurns: map[string]bool{}, toolsStarted: map[string]bool{},
	}
}

// reset forgets every thread's state (a side process's next fork).
func (m *mapper) reset() {
	fresh := newMapper()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.manualPending, m.manualTurns, m.lastTotal = 0, fresh.manualTurns, nil
	m.compPre, m.usageSince, m.itemCompactions = fresh.compPre, fresh.usageSince, fresh.itemCompactions
	m.deprecatedTurns, m.toolsStarted, m.activeTurn = fresh.deprecatedTurns, fresh.toolsStarted, ""
	m.prompts, m.afterCompaction, m.ledger = nil, "", ledger{}
}

// expectManual notes that thread/compact/start is about to be sent: the next
// turn to carry a contextCompaction item is the manual compaction turn. The
// next turn to start is not necessarily it: a goal-continuation turn Codex
// was about to start can report turn/started after the request was sent
// (the compaction then interrupts it), so the marker is claimed by the
// compaction item, not by turn/started.
func (m *mapper) expectManual() {
	m.mu.Lock()
	m.manualPending++
	m.mu.Unlock()
}

// expectPrompt notes a prompt about to be sent with turn/start: its
// userMessage item is not echoed as user.message (the service records
// prompts itself).
func (m *mapper) expectPrompt(text string) {
	m.mu.Lock()
	m.prompts = append(m.prompts, text)
	m.mu.Unlock()
}

// dropPrompt undoes expectPrompt when turn/start failed.
func (m *mapper) dropPrompt(text string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, p := range m.prompts {
		if p == text {
			m.prompts = append(m.prompts[:i], m.prompts[i+1:]...)
			return
		}
	}
}

// cancelManual undoes expectManual when the request failed.
func (m *mapper) cancelManual() {
	m.mu.Lock()
	if m.manualPending > 0 {
		m.manualPending--
	}
	m.mu.Unlock()
}

// claimManual marks turn, whose compaction item just began or completed, as
// the manual compaction turn when a thread/compact/start is pending and the
// turn is not marked yet (caller holds m.mu).
func (m *mapper) claimManual(turn string, out *mapOut) {
	if turn == "" || m.manualTurns[turn] || m.manualPending == 0 {
		return
	}
	m.manualPending--
	m.manualTurns[turn] = true
	out.ManualTurn = turn
}

// active returns the id of the turn in progress ("" when idle).
func (m *mapper) active() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.activeTurn
}

// lastTokens returns the last known context size (last.totalTokens).
func (m *mapper) lastTokens() *int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastTotal
}

// rawID derives a stable native id for a line that carries none of its own.
func rawID(method string, raw []byte) string {
	sum := sha256.Sum256(raw)
	return "codex:" + method + ":" + hex.EncodeToString(sum[:8])
}

func entryEvent(kind core.Kind, nativeID string, payload any) core.Event {
	return core.Event{Entry: &core.NewEntry{Kind: kind, Payload: core.Payload(payload), NativeID: nativeID}}
}

// harnessEvent keeps a message Bridge has no mapping for, whole.
func harnessEvent(method string, params json.RawMessage, raw []byte) core.Event {
	p := core.HarnessEventPayload{Type: method}
	if len(params) > 0 && json.Valid(params) {
		p.Params = params
	}
	return entryEvent(core.KindHarnessEvent, rawID(method, raw), p)
}

// ignored notifications carry nothing the record needs: streaming deltas
// (the whole text arrives in item/completed), status pings and rate limits.
var ignored = map[string]bool{
	"item/agentMessage/delta": true, "item/plan/delta": true, "item/reasoning/summaryTextDelta": true,
	"item/reasoning/summaryPartAdded": true, "item/reasoning/textDelta": true,
	"item/commandExecution/outputDelta": true, "item/fileChange/outputDelta": true,
	"item/commandExecution/terminalInteraction": true, "item/fileChange/patchUpdated": true,
	"command/exec/outputDelta": true, "process/outputDelta": true, "item/mcpToolCall/progress": true,
	"account/rateLimits/updated": true, "thread/status/changed": true, "remoteControl/status/changed": true,
	"thread/readState/changed": true, "turn/diff/updated": true, "serverRequest/resolved": true,
	"mcpServer/startupStatus/updated": true, "thread/settings/updated": true,
}

// toolItems are item types reported as tool.started / tool.completed.
var toolItems = map[string]bool{
	"commandExecution": true, "fileChange": true, "mcpToolCall": true, "dynamicToolCall": true,
	"webSearch": true, "collabAgentToolCall": true, "imageGeneration": true, "imageView": true,
}

type itemParams struct {
	Item    json.RawMessage `json:"item"`
	TurnID  string          `json:"turnId"`
	Thread  string          `json:"threadId"`
	Started int64           `json:"startedAtMs"`
}

type itemHead struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// notification maps one notification.
func (m *mapper) notification(method string, params json.RawMessage, raw []byte) mapOut {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out mapOut
	switch method {
	case "thread/started":
		var p struct {
			Thread struct {
				ID    string `json:"id"`
				Model string `json:"model"`
			} `json:"thread"`
		}
		if json.Unmarshal(params, &p) == nil && p.Thread.ID != "" {
			out.Events = append(out.Events, core.Event{NativeSessionID: p.Thread.ID, Model: p.Thread.Model})
			m.ledger.model = p.Thread.Model
		}
	case "turn/started":
		var p struct {
			Turn struct {
				ID string `json:"id"`
			} `json:"turn"`
		}
		_ = json.Unmarshal(params, &p)
		m.activeTurn = p.Turn.ID
		out.TurnStarted = p.Turn.ID
	case "turn/completed":
		m.turnCompleted(params, &out)
	case "thread/tokenUsage/updated":
		m.tokenUsage(method, params, raw, &out)
	case "turn/plan/updated":
		m.planUpdated(method, params, raw, &out)
	case "item/started":
		m.itemStarted(params, raw, &out)
	case "item/completed":
		m.itemCompleted(params, raw, &out)
	case "thread/compacted":
		m.threadCompacted(method, params, raw, &out)
	case "error":
		m.errorNotification(method, params, raw, &out)
	default:
		if !ignored[method] {
			out.Events = append(out.Events, harnessEvent(method, params, raw))
		}
	}
	return out
}

// turnCompleted ends the active turn and reports its usage.
func (m *mapper) turnCompleted(params json.RawMessage, out *mapOut) {
	var p struct {
		Turn struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"turn"`
	}
	_ = json.Unmarshal(params, &p)
	end := &turnEnd{TurnID: p.Turn.ID, Status: p.Turn.Status}
	if p.Turn.Error != nil {
		end.Message = p.Turn.Error.Message
	}
	if m.activeTurn == p.Turn.ID {
		m.activeTurn = ""
	}
	if ev := m.ledger.turnEnded(p.Turn.ID); ev != nil {
		out.Events = append(out.Events, *ev)
	}
	out.TurnEnded = end
}

// tokenUsage reads the context gauge; the first count after a compaction
// is also recorded as the tokens the compacted context holds.
func (m *mapper) tokenUsage(method string, params json.RawMessage, raw []byte, out *mapOut) {
	var p struct {
		TurnID     string `json:"turnId"`
		TokenUsage struct {
			Last struct {
				TotalTokens int64 `json:"totalTokens"`
			} `json:"last"`
			ModelContextWindow *int64 `json:"modelContextWindow"`
		} `json:"tokenUsage"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		out.Events = append(out.Events, harnessEvent(method, params, raw))
		return
	}
	m.ledger.noteTotals(params)
	n := p.TokenUsage.Last.TotalTokens
	m.lastTotal = &n
	for id := range m.compPre {
		m.usageSince[id] = true
	}
	g := &core.Gauge{Used: n}
	if p.TokenUsage.ModelContextWindow != nil {
		g.Size = *p.TokenUsage.ModelContextWindow
	}
	out.Events = append(out.Events, core.Event{Gauge: g})
	if id := m.afterCompaction; id != "" && len(m.compPre) == 0 {
		// The first count Codex reports after a compaction: the tokens
		// the compacted context holds.
		m.afterCompaction = ""
		pl := core.ContextUsagePayload{Used: n, AfterCompaction: id, TurnID: p.TurnID, Size: max(g.Size, 0)}
		out.Events = append(out.Events, entryEvent(core.KindContextUsage, id+":tokens-after", pl))
	}
}

// planUpdated records the turn's plan.
func (m *mapper) planUpdated(method string, params json.RawMessage, raw []byte, out *mapOut) {
	var p struct {
		TurnID string `json:"turnId"`
		Plan   []struct {
			Step   string `json:"step"`
			Status string `json:"status"`
		} `json:"plan"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.Plan == nil {
		out.Events = append(out.Events, harnessEvent(method, params, raw))
		return
	}
	plan := core.Plan{Source: method, Steps: []core.PlanStep{}}
	for _, st := range p.Plan {
		plan.Steps = append(plan.Steps, core.PlanStep{Text: st.Step, Status: core.NormalizePlanStatus(st.Status)})
	}
	e := plan.Entry(rawID(method, raw))
	out.Events = append(out.Events, core.Event{Entry: &e})
}

// threadCompacted records a compaction reported by the deprecated
// thread/compacted notification, unless its contextCompaction item did.
func (m *mapper) threadCompacted(method string, params json.RawMessage, raw []byte, out *mapOut) {
	var p struct {
		TurnID string `json:"turnId"`
	}
	_ = json.Unmarshal(params, &p)
	if m.itemCompactions[p.TurnID] > 0 {
		return // already reported from the contextCompaction item
	}
	m.deprecatedTurns[p.TurnID] = true
	m.claimManual(p.TurnID, out)
	c := m.compacted(p.TurnID, rawID(method, raw), params, m.lastTotal)
	out.Events = append(out.Events, core.Event{Entry: ptr(c.Entry())})
	out.Compacted = p.TurnID
	m.afterCompaction = c.NativeID
}

// errorNotification records Codex's error (retrying when it will retry).
func (m *mapper) errorNotification(method string, params json.RawMessage, raw []byte, out *mapOut) {
	var p struct {
		Error struct {
			Message        string          `json:"message"`
			CodexErrorInfo json.RawMessage `json:"codexErrorInfo"`
		} `json:"error"`
		WillRetry bool   `json:"willRetry"`
		TurnID    string `json:"turnId"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		out.Events = append(out.Events, harnessEvent(method, params, raw))
		return
	}
	status := "error"
	if p.WillRetry {
		status = "retrying"
	}
	pl := core.StatusPayload{Status: status, Message: p.Error.Message, WillRetry: &p.WillRetry, TurnID: p.TurnID}
	if len(p.Error.CodexErrorInfo) > 0 && string(p.Error.CodexErrorInfo) != "null" {
		pl.CodexErrorInfo = p.Error.CodexErrorInfo
	}
	out.Events = append(out.Events, entryEvent(core.KindSessionStatus, rawID(method, raw), pl))
}

func ptr[T any](v T) *T { return &v }

// notNull is v, or nil when v is JSON null (absent from a payload).
func notNull(v json.RawMessage) json.RawMessage {
	if string(v) == "null" {
		return nil
	}
	return v
}

func (m *mapper) itemStarted(params json.RawMessage, raw []byte, out *mapOut) {
	var p itemParams
	var h itemHead
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p.Item, &h) != nil || h.ID == "" {
		out.Events = append(out.Events, harnessEvent("item/started", params, raw))
		return
	}
	switch {
	case h.Type == "contextCompaction":
		m.claimManual(p.TurnID, out)
		m.compPre[h.ID] = m.lastTotal
		m.usageSince[h.ID] = false
	case toolItems[h.Type]:
		if !m.toolsStarted[h.ID] {
			m.toolsStarted[h.ID] = true
			out.Events = append(out.Events, toolStarted(h.Type, h.ID, p))
		}
	}
}

func toolStarted(typ, id string, p itemParams) core.Event {
	var it struct {
		Command, Cwd, Server, Tool, Arguments, Query, Changes json.RawMessage
	}
	_ = json.Unmarshal(p.Item, &it)
	pl := core.ToolStartedPayload{ToolID: id, Name: typ, TurnID: p.TurnID, Command: notNull(it.Command),
		Cwd: notNull(it.Cwd), Server: notNull(it.Server), Tool: notNull(it.Tool), Arguments: notNull(it.Arguments),
		Query: notNull(it.Query), Changes: notNull(it.Changes)}
	return entryEvent(core.KindToolStarted, id+":started", pl)
}

func (m *mapper) itemCompleted(params json.RawMessage, raw []byte, out *mapOut) {
	var p itemParams
	var h itemHead
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p.Item, &h) != nil || h.ID == "" {
		out.Events = append(out.Events, harnessEvent("item/completed", params, raw))
		return
	}
	switch h.Type {
	case "userMessage":
		var it struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		}
		_ = json.Unmarshal(p.Item, &it)
		var texts []string
		images := 0
		for _, c := range it.Content {
			switch c.Type {
			case "text":
				texts = append(texts, c.Text)
			case "image", "localImage":
				images++
			}
		}
		joined := strings.Join(texts, "\n")
		if len(m.prompts) > 0 && m.prompts[0] == joined {
			m.prompts = m.prompts[1:]
			return // our own prompt, recorded by the service
		}
		pl := core.UserMessagePayload{Text: joined, TurnID: p.TurnID, Images: images}
		out.Events = append(out.Events, entryEvent(core.KindUserMessage, h.ID, pl))
	case "agentMessage":
		var it struct {
			Text  string `json:"text"`
			Phase string `json:"phase"`
		}
		_ = json.Unmarshal(p.Item, &it)
		pl := core.AssistantMessagePayload{Text: it.Text, TurnID: p.TurnID, Phase: it.Phase}
		out.Events = append(out.Events, entryEvent(core.KindAssistantMessage, h.ID, pl))
	case "contextCompaction":
		m.claimManual(p.TurnID, out)
		m.itemCompactions[p.TurnID]++
		if m.deprecatedTurns[p.TurnID] {
			return // already reported from thread/compacted
		}
		pre, seen := m.compPre[h.ID]
		if !seen {
			pre = m.lastTotal
		}
		var post *int64
		if m.usageSince[h.ID] {
			post = m.lastTotal
		}
		delete(m.compPre, h.ID)
		delete(m.usageSince, h.ID)
		c := m.compacted(p.TurnID, h.ID, params, pre)
		c.PostTokens = post
		out.Events = append(out.Events, core.Event{Entry: ptr(c.Entry())})
		out.Compacted = p.TurnID
		m.afterCompaction = c.NativeID
	default:
		if !toolItems[h.Type] {
			out.Events = append(out.Events, entryEvent(core.KindHarnessEvent, h.ID+":completed",
				core.HarnessEventPayload{Type: "item/completed", ItemType: h.Type, TurnID: p.TurnID, Item: p.Item}))
			return
		}
		if !m.toolsStarted[h.ID] {
			out.Events = append(out.Events, toolStarted(h.Type, h.ID, p))
		}
		delete(m.toolsStarted, h.ID)
		out.Events = append(out.Events, toolCompleted(h.Type, h.ID, p)...)
	}
}

func toolCompleted(typ, id string, p itemParams) []core.Event {
	var it struct {
		Status           string          `json:"status"`
		ExitCode         *int            `json:"exitCode"`
		AggregatedOutput *string         `json:"aggregatedOutput"`
		DurationMs       *int64          `json:"durationMs"`
		Error            json.RawMessage `json:"error"`
		Changes          []struct {
			Path string          `json:"path"`
			Kind json.RawMessage `json:"kind"`
		} `json:"changes"`
	}
	_ = json.Unmarshal(p.Item, &it)
	pl := core.ToolCompletedPayload{ToolID: id, Name: typ, Status: it.Status, TurnID: p.TurnID,
		ExitCode: it.ExitCode, DurationMs: it.DurationMs}
	if it.AggregatedOutput != nil {
		o := *it.AggregatedOutput
		if len(o) > maxToolOutput {
			o = o[len(o)-maxToolOutput:]
			pl.OutputTruncated = true
		}
		pl.Output = o
	}
	if len(it.Error) > 0 && string(it.Error) != "null" {
		pl.Error = it.Error
	}
	evs := []core.Event{entryEvent(core.KindToolCompleted, id+":completed", pl)}
	if typ == "fileChange" && (it.Status == "completed" || it.Status == "") {
		for _, c := range it.Changes {
			if c.Path == "" {
				continue
			}
			a := core.ArtifactCreatedPayload{Path: c.Path, ToolID: id}
			var k struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(c.Kind, &k) == nil {
				a.Change = k.Type
			}
			evs = append(evs, entryEvent(core.KindArtifactCreated, id+":"+c.Path, a))
		}
	}
	return evs
}

// compacted builds the normalised report (caller holds m.mu).
func (m *mapper) compacted(turn, nativeID string, raw json.RawMessage, pre *int64) core.Compacted {
	trigger := core.TriggerAuto
	if m.manualTurns[turn] {
		trigger = core.TriggerManual
	}
	c := core.Compacted{Harness: Harness, Trigger: trigger, NativeID: nativeID, PreTokens: pre, Estimated: true}
	if json.Valid(raw) {
		c.Raw = append(json.RawMessage(nil), raw...)
	}
	return c
}
