package dsh

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// Event is one DSH persistence event, as written to session.jsonl and as
// session.history returns it ({type, seq, time, data, surfaceOp?,
// sourceEventSeqs?, ignorable?}). A batched text-chunks record has seq0 and
// time0 instead and takes len(data.texts) consecutive seqs.
type Event struct {
	Type            string          `json:"type"`
	Seq             *int64          `json:"seq,omitempty"`
	Seq0            *int64          `json:"seq0,omitempty"`
	Time            int64           `json:"time,omitempty"`
	Time0           int64           `json:"time0,omitempty"`
	Data            json.RawMessage `json:"data,omitempty"`
	SurfaceOp       json.RawMessage `json:"surfaceOp,omitempty"`
	SourceEventSeqs []int64         `json:"sourceEventSeqs,omitempty"`
	Ignorable       bool            `json:"ignorable,omitempty"`
}

// First is the first seq the event takes (-1 when it has none).
func (e Event) First() int64 {
	switch {
	case e.Seq != nil:
		return *e.Seq
	case e.Seq0 != nil:
		return *e.Seq0
	}
	return -1
}

// Last is the last seq the event takes (text-chunks take several).
func (e Event) Last() int64 {
	if e.Seq == nil && e.Seq0 != nil {
		var d struct {
			Texts []json.RawMessage `json:"texts"`
		}
		_ = json.Unmarshal(e.Data, &d)
		if n := int64(len(d.Texts)); n > 0 {
			return *e.Seq0 + n - 1
		}
	}
	return e.First()
}

// quiet lists event types that carry nothing for the record (streaming
// chunks, request plumbing, bookkeeping) and are dropped silently.
var quiet = map[string]bool{
	"permission/preset": true, "sandbox/mode": true, "approval/policy": true, "agent/inbox/spliced": true,
	"turn/start": true, "step/start": true, "step/end": true, "turn/end": true, "session/title": true,
	"session/title-llm-request": true, "request/header": true, "request/context": true,
	"assistant/chunk": true, "text-chunks": true, "session/end-seed": true, "command/run": true,
	"command/done": true, "compaction/start": true, "compaction/summary": true, "compaction/end": true,
	"compaction/prune": true,
}

// node is one message on the session surface (what the model sees). Its
// native id is the mapper's nativeID(seq): only the seq is kept, so the
// surface costs 8 bytes a message on a long session.
type node struct {
	seq int64
}

// bracket is an open compaction/start … compaction/end.
type bracket struct {
	id          string
	turn        *int64               // the owning turn; nil for a standalone (manual) bracket
	command     *string              // sourceCommandId, when a command started it
	cause       core.CompactionCause // core.CausePressure or core.CauseContextOverflow (automatic only)
	pre         *int64               // the gauge when it started, where known
	start       json.RawMessage
	summary     json.RawMessage
	prune       json.RawMessage
	tokens      *int64
	text        string
	replacement json.RawMessage
	replaces    []string
}

// owner names the bracket as DSH's compaction contract does in its errors.
func (b *bracket) owner() string {
	if b.turn == nil {
		return "standalone compaction"
	}
	return fmt.Sprintf("compaction for turn %d", *b.turn)
}

// Refusal is a compaction event the mapper refused because it breaks DSH's
// compaction contract; Message is the contract's own wording.
type Refusal struct {
	CompactionID    string
	SourceCommandID string
	Message         string
}

// mapper turns DSH events, in seq order, into Bridge entries. It keeps the
// state that spans events: the open turn, the open compaction bracket and
// the message surface (for positional replace ops). One mapper reads one
// session; events at or below the last seq already read are skipped, so
// feeding overlapping history pages records nothing twice.
type mapper struct {
	session string
	// ownPrompt reports whether a user message came from a prompt this
	// process sent (source.rpcId); those are recorded by the service.
	ownPrompt func(rpcID string) bool
	emit      func(core.NewEntry)

	last   int64
	inTurn bool
	turnNo int64 // the open turn's number, when inTurn
	inStep bool
	// overflow: the open step's request was refused as too large for the
	// context window (an automatic compaction now is a context-overflow one).
	overflow bool
	// pressure is the gauge DSH itself keeps (its contextPressure
	// projection): the prompt-side tokens of the newest usage sample.
	pressure *int64
	open     *bracket
	// refused lists the compaction events refused for breaking the
	// contract, newest last.
	refused []Refusal
	surface []node
	title   string
	model   string // "<provider>/<model>", as Host.Models lists it
	// onTurnEnd, when set, is told the seq of each turn/end fed.
	onTurnEnd func(seq int64)
	// onModel, when set, is told each time the model changes.
	onModel func(model string)
	stale   int // brackets dropped by session/end-seed
}

func newMapper(session string, emit func(core.NewEntry)) *mapper {
	return &mapper{session: session, emit: emit, last: -1}
}

func (m *mapper) prefix() string {
	if m.session == "" {
		return "dsh"
	}
	return m.session
}

func (m *mapper) nativeID(seq int64) string { return fmt.Sprintf("%s#%d", m.prefix(), seq) }

// feed maps one event. It reports whether the event was new.
func (m *mapper) feed(ev Event) bool {
	first := ev.First()
	if first >= 0 && first <= m.last {
		return false
	}
	if l := ev.Last(); l > m.last {
		m.last = l
	}
	switch ev.Type {
	case "turn/start", "turn/end":
		if m.open != nil {
			// A live bracket cannot cross a turn boundary: DSH refuses the
			// append; a log that has one is refused here the same way.
			b := m.open
			m.open = nil
			m.refuse(ev, b.id, b.command, fmt.Sprintf("%s cannot cross an open %s", ev.Type, b.owner()), b.replaces)
		}
		m.inTurn, m.inStep, m.overflow = ev.Type == "turn/start", false, false
		if m.inTurn {
			m.turnNo = turnOf(ev)
		} else if m.onTurnEnd != nil {
			m.onTurnEnd(first)
		}
	case "step/start":
		m.inStep, m.overflow = true, false
	case "step/end":
		m.inStep = false
	case "assistant/chunk":
		m.chunk(ev)
	case "session/title":
		var d struct {
			Title string `json:"title"`
		}
		if json.Unmarshal(ev.Data, &d) == nil && d.Title != "" {
			m.title = d.Title
		}
	case "request/context":
		var d struct {
			Provider string `json:"provider"`
			Model    string `json:"model"`
		}
		if json.Unmarshal(ev.Data, &d) == nil {
			m.setModel(d.Provider, d.Model)
		}
	case "session/end-seed":
		// A bracket still open when the session was re-seeded (a restart)
		// never finished: it is stale and is not reported.
		if m.open != nil {
			m.stale++
			m.open = nil
		}
	case "compaction/start":
		m.compactionStart(ev)
	case "compaction/summary", "compaction/prune":
		m.compactionBody(ev)
	case "compaction/end":
		m.compactionEnd(ev)
	case "user/message":
		m.userMessage(ev)
	case "assistant/message":
		m.assistantMessage(ev)
	case "tool/result":
		m.toolResult(ev)
	default:
		if !quiet[ev.Type] && !ev.Ignorable {
			m.harnessEvent(ev, nil)
		}
	}
	return true
}

// setModel notes the model a request or answer names.
func (m *mapper) setModel(provider, model string) {
	if model == "" {
		return
	}
	id := model
	if provider != "" {
		id = provider + "/" + model
	}
	if id != m.model {
		m.model = id
		if m.onModel != nil {
			m.onModel(id)
		}
	}
}

// applySurface applies the event's surface op and returns the native ids of
// the nodes a replace shadowed. start and end name current surface nodes
// (rc.8 writes the seqs of the first and last shadowed node); they are
// resolved by position on the current surface, so a replace can cover an
// earlier replacement. When they name no node, they are read as surface
// indices. An op that resolves to nothing appends and says so.
func (m *mapper) applySurface(ev Event) (replaced []string, unresolved bool) {
	n := node{seq: ev.First()}
	var op struct {
		Op    string `json:"op"`
		Start int64  `json:"start"`
		End   int64  `json:"end"`
	}
	if len(ev.SurfaceOp) == 0 || json.Unmarshal(ev.SurfaceOp, &op) != nil || op.Op != "replace" {
		m.surface = append(m.surface, n)
		return nil, false
	}
	i, j := -1, -1
	for k, s := range m.surface {
		if s.seq == op.Start {
			i = k
		}
		if s.seq == op.End {
			j = k
		}
	}
	if i < 0 || j < 0 || i > j {
		if op.Start >= 0 && op.Start <= op.End && op.End < int64(len(m.surface)) {
			i, j = int(op.Start), int(op.End)
		} else {
			m.surface = append(m.surface, n)
			return nil, true
		}
	}
	for _, s := range m.surface[i : j+1] {
		replaced = append(replaced, m.nativeID(s.seq))
	}
	rest := append([]node{n}, m.surface[j+1:]...)
	m.surface = append(m.surface[:i], rest...)
	return replaced, false
}

// Surface returns the seqs of the current surface nodes, in order.
func (m *mapper) Surface() []int64 {
	out := make([]int64, len(m.surface))
	for i, s := range m.surface {
		out[i] = s.seq
	}
	return out
}

type contentBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	ID           string          `json:"id"`
	ToolCallID   string          `json:"toolCallId"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	Args         json.RawMessage `json:"args"`
	MediaType    string          `json:"mediaType"`
	AttachmentID string          `json:"attachmentId"`
	// Attachment is where rc.8 puts an image's durable reference
	// ({attachmentId, mediaType, width, height, bytes}).
	Attachment *struct {
		AttachmentID string `json:"attachmentId"`
		MediaType    string `json:"mediaType"`
	} `json:"attachment"`
}

func joinText(blocks []contentBlock, kind string) string {
	var b strings.Builder
	for _, c := range blocks {
		if c.Type == kind {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

type messageSource struct {
	Kind         string `json:"kind"`
	RPCID        string `json:"rpcId"`
	Plugin       string `json:"plugin"`
	CompactionID string `json:"compactionId"`
	// SourceCommandID is a compaction checkpoint's initiating command.
	SourceCommandID *string `json:"sourceCommandId"`
	GoalID          string  `json:"goalId"`
	Provider        string  `json:"provider"`
	Model           string  `json:"model"`
}

func (m *mapper) userMessage(ev Event) {
	id := m.nativeID(ev.First())
	replaced, unresolved := m.applySurface(ev)
	var d struct {
		Content []contentBlock `json:"content"`
		Source  messageSource  `json:"source"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	text := joinText(d.Content, "text")
	if d.Source.Kind == "plugin" && d.Source.Plugin == "compact" {
		// The checkpoint message that replaces the compacted span: it belongs
		// to the bracket's context.compacted, not to the conversation.
		var msg string
		switch {
		case m.open == nil:
			msg = "compaction checkpoint has no matching compaction/start"
		case d.Source.CompactionID != "" && d.Source.CompactionID != m.open.id:
			msg = fmt.Sprintf("compaction checkpoint id %s does not match compaction/start id %s", d.Source.CompactionID, m.open.id)
		case deref(d.Source.SourceCommandID) != deref(m.open.command):
			msg = fmt.Sprintf("compaction checkpoint sourceCommandId %s does not match compaction/start sourceCommandId %s",
				deref(d.Source.SourceCommandID), deref(m.open.command))
		}
		if msg != "" {
			// The bracket it was to complete is refused with it.
			m.open = nil
			m.refuse(ev, d.Source.CompactionID, d.Source.SourceCommandID, msg, replaced)
			return
		}
		m.open.replacement = replacementRaw(ev)
		m.open.replaces = replaced
		return
	}
	if d.Source.Kind == "user" && m.ownPrompt != nil && m.ownPrompt(d.Source.RPCID) {
		return
	}
	p := userMessage{Text: text, Source: d.Source.Kind}
	// Images: their count, and DSH's references to the bytes it keeps
	// (recovered through session.attachment when a migration needs them).
	var images []core.HostImage
	for _, c := range d.Content {
		if c.Type == "image" {
			img := core.HostImage{MediaType: c.MediaType, Ref: firstNonEmpty(c.AttachmentID, c.ID)}
			if a := c.Attachment; a != nil {
				img.Ref = firstNonEmpty(a.AttachmentID, img.Ref)
				img.MediaType = firstNonEmpty(a.MediaType, img.MediaType)
			}
			images = append(images, img)
		}
	}
	p.Images, p.HostImages, p.Replaces = len(images), images, replaced
	if unresolved {
		p.SurfaceOp = ev.SurfaceOp
	}
	switch d.Source.Kind {
	case "user":
	case "goal":
		p.GoalID = &d.Source.GoalID
	default:
		// Harness-generated context (runtime snapshots, plugin notes): kept
		// whole, but not as a conversation message.
		m.harnessEvent(ev, replaced)
		return
	}
	m.emit(core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(p), NativeID: id})
}

func (m *mapper) assistantMessage(ev Event) {
	id := m.nativeID(ev.First())
	replaced, _ := m.applySurface(ev)
	var d struct {
		Message struct {
			Content []contentBlock `json:"content"`
			Source  messageSource  `json:"source"`
		} `json:"message"`
		Usage json.RawMessage `json:"usage"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	m.sample(d.Usage)
	m.setModel(d.Message.Source.Provider, d.Message.Source.Model)
	defer m.usageEntry(ev, id, d.Usage, d.Message.Source.Model) // after the message's own entries
	for _, c := range d.Message.Content {
		if c.Type == "tool-call" || c.Type == "tool_call" || c.Type == "tool-use" || c.Type == "tool_use" {
			tid := firstNonEmpty(c.ToolCallID, c.ID)
			input := c.Input
			if len(input) == 0 {
				input = c.Args
			}
			m.emit(core.NewEntry{Kind: core.KindToolStarted, NativeID: id + ":tool:" + tid,
				Payload: core.Payload(toolStarted{ToolID: tid, Name: c.Name, Input: input})})
		}
	}
	text := joinText(d.Message.Content, "text")
	if text == "" {
		return
	}
	p := assistantMessage{Text: text, Reasoning: joinText(d.Message.Content, "reasoning"), Usage: d.Usage, Replaces: replaced}
	if d.Message.Source.Model != "" {
		p.Model, p.Provider = d.Message.Source.Model, &d.Message.Source.Provider
	}
	m.emit(core.NewEntry{Kind: core.KindAssistantMessage, Payload: core.Payload(p), NativeID: id})
}

func (m *mapper) toolResult(ev Event) {
	id := m.nativeID(ev.First())
	replaced, _ := m.applySurface(ev)
	var d struct {
		ToolCallID string `json:"toolCallId"`
		CallID     string `json:"callId"`
		ID         string `json:"id"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	tid := firstNonEmpty(d.ToolCallID, d.CallID, d.ID)
	if tid == "" {
		m.harnessEvent(ev, replaced)
		return
	}
	p := toolCompleted{ToolID: tid, Result: ev.Data, Replaces: replaced}
	m.emit(core.NewEntry{Kind: core.KindToolCompleted, Payload: core.Payload(p), NativeID: id})
}

// harnessEvent keeps an event Bridge has no mapping for, whole.
func (m *mapper) harnessEvent(ev Event, replaced []string) {
	p := harnessEvent{Type: ev.Type, Seq: ev.First(), Data: ev.Data, SurfaceOp: ev.SurfaceOp, Replaces: replaced}
	m.emit(core.NewEntry{Kind: core.KindHarnessEvent, Payload: core.Payload(p), NativeID: m.nativeID(ev.First())})
}

type bracketData struct {
	CompactionID       string                      `json:"compactionId"`
	SourceCommandID    *string                     `json:"sourceCommandId"`
	Turn               *int64                      `json:"turn"`
	Summary            []contentBlock              `json:"summary"`
	ShadowedRange      *struct{ Start, End int64 } `json:"shadowedRange"`
	ShadowedSeqs       []int64                     `json:"shadowedSeqs"`
	ShadowedTokenCount json.RawMessage             `json:"shadowedTokenCount"`
	Error              json.RawMessage             `json:"error"`
}

// usage is DSH's token usage of one request.
type usage struct {
	InputTokens      int64 `json:"inputTokens"`
	CacheReadTokens  int64 `json:"cacheReadTokens"`
	CacheWriteTokens int64 `json:"cacheWriteTokens"`
}

// sample notes a usage sample as the gauge: input plus cache traffic, no
// output, as DSH's own contextPressure counts it.
func (m *mapper) sample(raw json.RawMessage) {
	var u *usage
	if len(raw) == 0 || json.Unmarshal(raw, &u) != nil || u == nil {
		return
	}
	p := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	m.pressure = &p
}

// chunk reads what an assistant/chunk tells the compaction record: a usage
// sample, or the step's request refused for the context window.
func (m *mapper) chunk(ev Event) {
	var d struct {
		Chunk struct {
			Type   string          `json:"type"`
			Usage  json.RawMessage `json:"usage"`
			Reason struct {
				Kind    string `json:"kind"`
				Failure struct {
					Code string `json:"code"`
				} `json:"failure"`
			} `json:"reason"`
		} `json:"chunk"`
	}
	if json.Unmarshal(ev.Data, &d) != nil {
		return
	}
	switch d.Chunk.Type {
	case "usage":
		m.sample(d.Chunk.Usage)
	case "finish":
		if d.Chunk.Reason.Kind == "error" && d.Chunk.Reason.Failure.Code == "CONTEXT_WINDOW_EXCEEDED" {
			m.overflow = true
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "undefined"
	}
	return *s
}

func deref64(n *int64) int64 {
	if n == nil {
		return -1
	}
	return *n
}

func ownerText(n *int64) string {
	if n == nil {
		return "null"
	}
	return fmt.Sprint(*n)
}

func replacementRaw(ev Event) json.RawMessage {
	return core.Payload(replacement{Seq: ev.First(), SurfaceOp: ev.SurfaceOp, SourceEventSeqs: ev.SourceEventSeqs})
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
