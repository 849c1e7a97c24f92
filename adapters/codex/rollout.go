package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/inputfile"
)

// Rollout files ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<thread>.jsonl)
// hold one {"timestamp","ordinal","type","payload"} object per line. Import
// maps them to entries whose native ids match what the live mapping uses
// (item ids), so a thread imported after it was driven live, or imported
// twice, adds nothing new.

type rolloutLine struct {
	// Timestamp is when Codex wrote the line (RFC 3339): the entries mapped
	// from it are recorded at that time.
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Ordinal   *int64          `json:"ordinal"`
	Payload   json.RawMessage `json:"payload"`
}

type rolloutItemEvent struct {
	Type   string          `json:"type"`
	TurnID string          `json:"turn_id"`
	Item   json.RawMessage `json:"item"`
}

type rolloutItem struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

func (it rolloutItem) text() string {
	var parts []string
	for _, c := range it.Content {
		if c.Text != "" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ImportStream reads a Codex rollout file into entries, handed to sink in
// batches (core.Importer): messages, function calls and their outputs, and
// one context.compacted per compaction (the `compacted` line merged with
// its ContextCompaction item). Lines it cannot read are kept as
// harness.event entries. The file is read twice, neither time whole: a
// first pass checks it is a rollout and learns what the mapping needs to
// know ahead (the session id, which turns carry a user message), the second
// maps it.
func (h *Host) ImportStream(ctx context.Context, path string, sink core.ImportSink, progress func(done, total int64)) (core.ImportedSession, error) {
	m := &rolloutMapper{turnsWithUser: map[uint64]bool{}, legacyMessages: true}
	var records, other int
	err := eachRolloutLine(ctx, path, nil, func(_ int, t []byte) error {
		if !isRolloutLine(t) {
			other++
			return nil
		}
		records++
		m.scan(t)
		return nil
	})
	if err != nil {
		return core.ImportedSession{}, err
	}
	if records == 0 || other > records {
		return core.ImportedSession{}, core.Errorf(core.CodeInvalid,
			"%s is not a codex rollout file: %d of %d non-empty lines are rollout records ({\"type\",\"payload\"} objects)",
			core.Quote(filepath.Base(path)), records, records+other)
	}
	m.b = core.ImportBatcher{Sink: sink, Head: core.ImportedSession{NativeID: m.id, Cwd: m.cwd}}
	err = eachRolloutLine(ctx, path, progress, func(i int, t []byte) error {
		m.line(i, t)
		return m.b.Err()
	})
	if err == nil {
		m.flush()
		err = m.b.Flush()
	}
	if err != nil {
		return core.ImportedSession{}, err
	}
	return m.b.Head, nil
}

// Import reads a whole rollout into memory (core.CollectImport): for
// reading one thread's history and for tests; imports stream.
func (h *Host) Import(ctx context.Context, path string, progress func(done, total int64)) (core.ImportedSession, error) {
	return core.CollectImport(ctx, h, path, progress)
}

// eachRolloutLine calls fn with each non-empty line of the rollout file at
// path (trimmed; valid until fn returns) and its index among them.
func eachRolloutLine(ctx context.Context, path string, progress func(done, total int64), fn func(i int, line []byte) error) error {
	f, err := inputfile.Open(ctx, path, "codex rollout file", 0)
	if err != nil {
		return err
	}
	defer f.Close()
	total := f.Size()
	lr := inputfile.NewLines(f, "codex rollout file "+core.Quote(filepath.Base(path)), 0)
	i := 0
	for {
		line, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if err := fn(i, t); err != nil {
				return err
			}
			i++
		}
		if progress != nil && i%200 == 0 {
			progress(lr.Done(), total)
		}
	}
	if progress != nil {
		progress(total, total)
	}
	return nil
}

// rolloutTypes are the line types a rollout file holds.
var rolloutTypes = map[string]bool{"session_meta": true, "turn_context": true, "compacted": true,
	"event_msg": true, "response_item": true}

// isRolloutLine tells whether a line is a rollout record: a JSON object with
// a known "type" and a "payload".
func isRolloutLine(line []byte) bool {
	if line[0] != '{' {
		return false
	}
	var l rolloutLine
	return json.Unmarshal(line, &l) == nil && rolloutTypes[l.Type] && len(l.Payload) > 0
}

// rolloutMapper holds the state of one mapping pass.
type rolloutMapper struct {
	b              core.ImportBatcher
	id, cwd        string          // the session_meta the first pass found last
	turnsWithUser  map[uint64]bool // by turnKey: a set as long as the thread's turns, 8 bytes a key
	legacyMessages bool
	lastTotal      *int64
	turnStartTotal *int64
	turn           string
	usage          rolloutUsage // token totals, for each turn's usage.reported (usage.go)
	pending        *pendingCompaction
	nativeID       string // the session id as of the line being mapped
}

type pendingCompaction struct {
	key     string
	message string
	raw     json.RawMessage
	pre     *int64
	turn    string
}

// mapRollout maps the lines of a rollout file held in memory (tests).
func mapRollout(lines [][]byte) core.ImportedSession {
	m := &rolloutMapper{turnsWithUser: map[uint64]bool{}, legacyMessages: true}
	for _, raw := range lines {
		m.scan(raw)
	}
	var all []core.NewEntry
	m.b = core.ImportBatcher{Head: core.ImportedSession{NativeID: m.id, Cwd: m.cwd},
		Sink: func(part core.ImportedSession) error { all = append(all, part.Entries...); return nil }}
	for i, raw := range lines {
		m.line(i, raw)
	}
	m.flush()
	_ = m.b.Flush()
	out := m.b.Head
	out.Entries = all
	return out
}

// scan is the first pass over one line: which turns carry a user message
// (a compaction inside one ran before it, automatically), whether messages
// come as items, and the session's id and cwd.
func (m *rolloutMapper) scan(raw []byte) {
	var l rolloutLine
	if json.Unmarshal(raw, &l) != nil {
		return
	}
	if l.Type == "session_meta" {
		var p struct {
			ID  string `json:"id"`
			Cwd string `json:"cwd"`
		}
		if json.Unmarshal(l.Payload, &p) == nil {
			m.id, m.cwd = p.ID, p.Cwd
		}
		return
	}
	if l.Type != "event_msg" {
		return
	}
	var ev rolloutItemEvent
	if json.Unmarshal(l.Payload, &ev) != nil || ev.Type != "item_completed" {
		return
	}
	var it rolloutItem
	_ = json.Unmarshal(ev.Item, &it)
	switch it.Type {
	case "UserMessage":
		m.turnsWithUser[turnKey(ev.TurnID)] = true
		m.legacyMessages = false
	case "AgentMessage":
		m.legacyMessages = false
	}
}

func (m *rolloutMapper) add(kind core.Kind, nativeID string, payload any) {
	_ = m.b.Add(core.NewEntry{Kind: kind, Payload: core.Payload(payload), NativeID: nativeID}) // its error stops the pass (Err)
}

func (m *rolloutMapper) line(i int, raw []byte) {
	var l rolloutLine
	if err := json.Unmarshal(raw, &l); err != nil {
		text := string(raw)
		if len(text) > 4096 {
			text = text[:4096]
		}
		m.add(core.KindHarnessEvent, rawID("rollout/badLine", raw)+":"+strconv.Itoa(i),
			core.HarnessEventPayload{Type: "codex/rollout.badLine", Line: text, Error: err.Error()})
		return
	}
	m.b.Stamp(core.ParseTime(l.Timestamp))
	key := strconv.Itoa(i)
	if l.Ordinal != nil {
		key = strconv.FormatInt(*l.Ordinal, 10)
	}
	switch l.Type {
	case "session_meta":
		var p struct {
			ID  string `json:"id"`
			Cwd string `json:"cwd"`
		}
		if json.Unmarshal(l.Payload, &p) == nil {
			m.nativeID = p.ID
		}
	case "turn_context":
		var p struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(l.Payload, &p) == nil && p.Model != "" {
			m.b.Head.Model = p.Model
		}
	case "compacted":
		m.flush()
		var p struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(l.Payload, &p)
		m.pending = &pendingCompaction{key: key, message: p.Message, raw: slimCompacted(l.Payload), pre: m.turnStartTotal, turn: m.turn}
	case "event_msg":
		m.event(key, l.Payload, raw)
	case "response_item":
		m.responseItem(l.Payload)
	}
}

// slimCompacted drops replacement_history (the whole new context) from a
// compacted payload, keeping its length.
func slimCompacted(p json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(p, &obj) != nil {
		return nil
	}
	if rh, ok := obj["replacement_history"]; ok {
		var items []json.RawMessage
		_ = json.Unmarshal(rh, &items)
		delete(obj, "replacement_history")
		obj["replacement_history_items"] = json.RawMessage(strconv.Itoa(len(items)))
	}
	b, _ := json.Marshal(obj)
	return b
}

func (m *rolloutMapper) event(key string, payload json.RawMessage, raw []byte) {
	var head struct {
		Type    string `json:"type"`
		TurnID  string `json:"turn_id"`
		Message string `json:"message"`
		Info    *struct {
			Last struct {
				TotalTokens int64 `json:"total_tokens"`
			} `json:"last_token_usage"`
		} `json:"info"`
	}
	if json.Unmarshal(payload, &head) != nil {
		return
	}
	switch head.Type {
	case "task_started":
		m.turn = head.TurnID
		m.turnStartTotal = m.lastTotal
	case "token_count":
		if head.Info != nil {
			n := head.Info.Last.TotalTokens
			m.lastTotal = &n
		}
		m.usage.noteTotals(payload)
	case "task_complete":
		if e := m.usage.turnEnded(head.TurnID, m.b.Head.Model); e != nil {
			_ = m.b.Add(*e)
		}
	case "user_message", "agent_message":
		if !m.legacyMessages {
			return
		}
		if head.Type == "agent_message" {
			m.add(core.KindAssistantMessage, "rollout:"+head.Type+":"+key, core.AssistantMessagePayload{Text: head.Message})
			break
		}
		if m.b.Head.Title == "" {
			m.b.Head.Title = title(head.Message)
		}
		m.add(core.KindUserMessage, "rollout:"+head.Type+":"+key, core.UserMessagePayload{Text: head.Message})
	case "context_compacted":
		m.compaction("rollout:context_compacted:"+key, m.turn, payload)
	case "item_completed":
		var ev rolloutItemEvent
		var it rolloutItem
		if json.Unmarshal(payload, &ev) != nil || json.Unmarshal(ev.Item, &it) != nil || it.ID == "" {
			return
		}
		switch it.Type {
		case "UserMessage":
			if m.b.Head.Title == "" {
				m.b.Head.Title = title(it.text())
			}
			m.add(core.KindUserMessage, it.ID, core.UserMessagePayload{Text: it.text(), TurnID: ev.TurnID})
		case "AgentMessage":
			m.add(core.KindAssistantMessage, it.ID, core.AssistantMessagePayload{Text: it.text(), TurnID: ev.TurnID})
		case "ContextCompaction":
			m.compaction(it.ID, ev.TurnID, payload)
		case "FileChange":
			m.fileChange(it.ID, ev.Item)
		}
	}
}

// fileChange reports each path of a completed FileChange item as an
// artifact, with the native ids the live mapping uses.
func (m *rolloutMapper) fileChange(id string, item json.RawMessage) {
	var fc struct {
		Status  string `json:"status"`
		Changes map[string]struct {
			Type string `json:"type"`
		} `json:"changes"`
	}
	if json.Unmarshal(item, &fc) != nil || (fc.Status != "" && fc.Status != "completed") {
		return
	}
	paths := make([]string, 0, len(fc.Changes))
	for p := range fc.Changes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		m.add(core.KindArtifactCreated, id+":"+p, core.ArtifactCreatedPayload{Path: p, ToolID: id, Change: fc.Changes[p].Type})
	}
}

// compaction reports one compaction, merged with a pending compacted line.
func (m *rolloutMapper) compaction(nativeID, turn string, itemRaw json.RawMessage) {
	c := core.Compacted{Harness: Harness, Trigger: core.TriggerManual, NativeID: nativeID, Estimated: true}
	if m.turnsWithUser[turnKey(turn)] {
		c.Trigger = core.TriggerAuto
	}
	raw := map[string]json.RawMessage{"item": itemRaw}
	c.PreTokens = m.turnStartTotal
	if p := m.pending; p != nil {
		c.Summary = p.message
		c.PreTokens = p.pre
		if p.raw != nil {
			raw["compacted"] = p.raw
		}
		m.pending = nil
	}
	c.PostTokens = m.lastTotal
	c.Raw = core.Payload(raw)
	_ = m.b.Add(c.Entry())
}

// flush reports a compacted line that no ContextCompaction item followed
// (older rollouts).
func (m *rolloutMapper) flush() {
	p := m.pending
	if p == nil {
		return
	}
	m.pending = nil
	c := core.Compacted{Harness: Harness, Trigger: core.TriggerUnknown, NativeID: "rollout:compacted:" + m.nativeID + ":" + p.key,
		Summary: p.message, PreTokens: p.pre, Estimated: true}
	if p.raw != nil {
		c.Raw = core.Payload(map[string]json.RawMessage{"compacted": p.raw})
	}
	_ = m.b.Add(c.Entry())
}

func (m *rolloutMapper) responseItem(payload json.RawMessage) {
	var p struct {
		Type      string          `json:"type"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Input     json.RawMessage `json:"input"`
		Output    json.RawMessage `json:"output"`
		Action    json.RawMessage `json:"action"`
	}
	if json.Unmarshal(payload, &p) != nil || p.CallID == "" {
		return
	}
	switch p.Type {
	case "function_call", "custom_tool_call", "local_shell_call":
		pl := core.ToolStartedPayload{ToolID: p.CallID, Name: p.Name, Arguments: p.Arguments, Action: p.Action}
		if len(p.Input) > 0 {
			pl.Input = p.Input
		}
		if p.Name == "" {
			pl.Name = p.Type
		}
		m.add(core.KindToolStarted, p.CallID+":started", pl)
	case "function_call_output", "custom_tool_call_output":
		pl := core.ToolCompletedPayload{ToolID: p.CallID}
		if len(p.Output) > 0 {
			out := p.Output
			if len(out) > maxToolOutput {
				var s string
				if json.Unmarshal(out, &s) == nil && len(s) > maxToolOutput {
					out = core.Payload(s[len(s)-maxToolOutput:])
					pl.OutputTruncated = true
				}
			}
			pl.Output = out
		}
		m.add(core.KindToolCompleted, p.CallID+":completed", pl)
	}
}

// turnKey is a 64-bit FNV-1a hash of a turn id: the first pass keeps the
// turns that carry a user message by it rather than by the id.
func turnKey(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

func title(s string) string {
	s = strings.TrimSpace(strings.SplitN(s, "\n", 2)[0])
	if r := []rune(s); len(r) > 80 {
		return string(r[:80])
	}
	return s
}
