package acp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/handoff"
)

// chunk is a message chunk update of kind (agent_message_chunk, …).
func chunk(kind, s string) update {
	return update{SessionUpdate: kind, Content: text(s)}
}

// view is what one session's updates depend on besides the entry at hand:
// the tool calls already announced (a tool.completed without its start
// becomes a tool_call), and the plan as it stands (a partial plan update is
// sent as the whole plan, which is what ACP's plan update is).
type view struct {
	tools map[string]toolInfo
	plan  []core.PlanStep
	own   handoff.Own // Bridge's own exchanges (checkpoint requests, restorations) are not shown
	// compaction: the client declared clientCapabilities.session.compaction
	// (ACP, unstable), so a harness's compaction is a compaction_update.
	compaction bool
}

type toolInfo struct {
	title, kind string
}

func newView(compaction bool) *view {
	return &view{tools: map[string]toolInfo{}, compaction: compaction}
}

// fields are an entry payload's members, read as they are.
type fields map[string]json.RawMessage

// str is member k as a string ("" when absent or not a string).
func (p fields) str(k string) string {
	var s string
	_ = json.Unmarshal(p[k], &s)
	return s
}

// updatesFor maps one recorded entry to the ACP updates a client is shown.
// replay is true on session/load, where the user's own messages are sent
// back too (during a live turn the client already has them). Entries with
// nothing to show (approvals, which the client answered itself; Bridge's
// bookkeeping) map to none.
func (v *view) updatesFor(e core.Entry, replay bool) []update {
	if v.own.Next(e) {
		return nil
	}
	var p fields
	_ = json.Unmarshal(e.Payload, &p)
	var us []update
	switch e.Kind {
	case core.KindUserMessage:
		if replay {
			us = []update{chunk("user_message_chunk", p.str("text"))}
		}
	case core.KindAssistantMessage:
		if t := p.str("text"); t != "" {
			u := chunk("agent_message_chunk", t)
			if id := p.str("messageId"); id != "" && replay {
				u.MessageID = id
			}
			us = []update{u}
		}
	case core.KindHarnessEvent:
		us = thoughtUpdates(p)
	case core.KindToolStarted:
		us = []update{v.toolStarted(p)}
	case core.KindToolCompleted:
		us = []update{v.toolCompleted(p)}
	case core.KindPlanUpdated:
		us = v.planUpdates(e.Payload)
	case core.KindContextCompacted:
		us = []update{v.compacted(e)}
	case core.KindMigrationHandoff:
		if replay {
			us = []update{chunk("user_message_chunk", p.str("summary"))}
		}
	case core.KindSessionRestored:
		if replay {
			us = []update{chunk("agent_message_chunk", fmt.Sprintf("[Bridge] Session restored (%s)\n", p.str("mode")))}
		}
	}
	for i := range us {
		us[i].Meta = inBridge(entryMeta{EntryID: e.ID, Kind: string(e.Kind), Seq: e.Seq})
	}
	return us
}

// thoughtUpdates shows thinking, which is kept as a harness event whose
// type names it (Claude Code "assistant/thinking", ACP "agent_thought",
// Codex reasoning, OpenCode "part.reasoning" with the part in raw); its
// text is the thought. Other harness events show nothing.
func thoughtUpdates(p fields) []update {
	typ := strings.ToLower(p.str("type"))
	if !strings.Contains(typ, "thinking") && !strings.Contains(typ, "thought") && !strings.Contains(typ, "reasoning") {
		return nil
	}
	t := p.str("text")
	if t == "" {
		var raw struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(p["raw"], &raw)
		t = raw.Text
	}
	if strings.TrimSpace(t) == "" {
		return nil
	}
	return []update{chunk("agent_thought_chunk", t)}
}

// toolStarted announces a tool call and remembers it.
func (v *view) toolStarted(p fields) update {
	id := p.str("toolId")
	info := toolInfo{title: toolTitle(p, p.str), kind: toolKind(p, p.str)}
	v.tools[id] = info
	u := update{SessionUpdate: "tool_call", ToolCallID: id, Title: info.title, Kind: info.kind,
		Status: "in_progress"}
	if in := p["input"]; len(in) > 0 && string(in) != "null" {
		u.RawInput = in
	}
	u.Locations = locations(p)
	if d := diffOf(p, p.str("name")); d != nil {
		u.Content = []diff{*d}
	}
	return u
}

// toolCompleted ends a tool call: an update of the announced call, or the
// whole call at once when the client never saw it start.
func (v *view) toolCompleted(p fields) update {
	id := p.str("toolId")
	status := "completed"
	var isErr bool
	_ = json.Unmarshal(p["isError"], &isErr)
	if isErr || p.str("status") == "failed" {
		status = "failed"
	}
	u := update{ToolCallID: id, Status: status}
	if out := p["output"]; len(out) > 0 && string(out) != "null" {
		u.RawOutput = out
		if s, ok := outputText(out); ok {
			u.Content = []toolContent{{Type: "content", Content: text(s)}}
		}
	}
	if c := p["content"]; json.Valid(c) && len(c) > 0 && c[0] == '[' {
		// An ACP harness's own tool content (diffs included) as it sent it.
		u.Content = c
	}
	if _, seen := v.tools[id]; !seen {
		// Finished without a start the client saw (a refused tool, a
		// record written before): the whole call at once.
		u.SessionUpdate = "tool_call"
		u.Title = toolTitle(p, p.str)
		u.Kind = toolKind(p, p.str)
	} else {
		u.SessionUpdate = "tool_call_update"
	}
	delete(v.tools, id)
	return u
}

// planUpdates sends the plan as it stands after a plan.updated entry.
func (v *view) planUpdates(payload json.RawMessage) []update {
	plan, ok := core.ParsePlan(payload)
	if !ok {
		return nil
	}
	v.applyPlan(plan)
	entries := make([]planEntry, 0, len(v.plan))
	for _, s := range v.plan {
		entries = append(entries, planEntry{Content: s.Text, Priority: "medium", Status: planStatus(s.Status)})
	}
	return []update{{SessionUpdate: "plan", Entries: entries}}
}

// compacted shows a harness's compaction: a compaction_update to a client
// that declared the capability, a line of text to others.
func (v *view) compacted(e core.Entry) update {
	var c core.Compacted
	_ = json.Unmarshal(e.Payload, &c)
	if v.compaction {
		u := update{SessionUpdate: "compaction_update", CompactionID: e.ID, Status: "completed"}
		if c.Summary != "" {
			u.Summary = []textBlock{text(c.Summary)}
		}
		return u
	}
	msg := fmt.Sprintf("[Bridge] Context compacted by %s (%s)", c.Harness, c.Trigger)
	if c.PreTokens != nil && c.PostTokens != nil {
		msg += fmt.Sprintf(": %d → %d tokens", *c.PreTokens, *c.PostTokens)
	}
	return chunk("agent_message_chunk", msg+"\n")
}

// applyPlan makes p the plan as it stands: a whole plan replaces it, a
// partial one changes or adds its steps (matched by id, else text).
func (v *view) applyPlan(p core.Plan) {
	if !p.Partial {
		v.plan = append([]core.PlanStep(nil), p.Steps...)
		return
	}
	for _, s := range p.Steps {
		found := false
		for i := range v.plan {
			if (s.ID != "" && v.plan[i].ID == s.ID) || (s.ID == "" && v.plan[i].Text == s.Text) {
				if s.Text != "" {
					v.plan[i].Text = s.Text
				}
				v.plan[i].Status = s.Status
				found = true
				break
			}
		}
		if !found {
			v.plan = append(v.plan, s)
		}
	}
}

// planStatus maps a step's status to ACP's (pending, in_progress,
// completed); a cancelled step is shown completed, as nothing is left to do.
func planStatus(s string) string {
	switch s {
	case core.PlanInProgress, core.PlanCompleted:
		return s
	case core.PlanCancelled:
		return core.PlanCompleted
	}
	return core.PlanPending
}

// toolTitle is a tool call's one-line title: the harness's own title, or
// its name with the first telling argument.
func toolTitle(p map[string]json.RawMessage, str func(string) string) string {
	if t := str("title"); t != "" {
		return t
	}
	name := str("name")
	if name == "" {
		name = "tool"
	}
	var in map[string]any
	if json.Unmarshal(p["input"], &in) == nil {
		for _, k := range []string{"command", "cmd", "file_path", "path", "pattern", "url", "query", "arg"} {
			if s, ok := in[k].(string); ok && s != "" {
				return name + ": " + oneLine(s)
			}
		}
	}
	var s string
	if json.Unmarshal(p["input"], &s) == nil && s != "" {
		return name + ": " + oneLine(s)
	}
	return name
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > 120 {
		s = string(r[:120]) + "…"
	}
	return s
}

// toolKind is ACP's kind of a tool call: the harness's own (an ACP harness
// says it), else from the tool's name.
func toolKind(p map[string]json.RawMessage, str func(string) string) string {
	if k := str("toolKind"); k != "" {
		return k
	}
	if k := str("kind"); validKinds[k] {
		return k
	}
	switch strings.ToLower(str("name")) {
	case "bash", "bashoutput", "killshell", "shell", "exec", "exec_command", "commandexecution", "local_shell", "command":
		return "execute"
	case "write", "edit", "multiedit", "notebookedit", "apply_patch", "filechange", "patch":
		return "edit"
	case "read", "notebookread", "view":
		return "read"
	case "grep", "glob", "ls", "search", "list":
		return "search"
	case "webfetch", "websearch", "fetch", "web_search":
		return "fetch"
	case "todowrite", "exitplanmode", "think":
		return "think"
	}
	return "other"
}

var validKinds = map[string]bool{"read": true, "edit": true, "delete": true, "move": true, "search": true,
	"execute": true, "think": true, "fetch": true, "switch_mode": true, "other": true}

// locations are the files a tool call names, as ACP tool call locations.
func locations(p map[string]json.RawMessage) []location {
	var in map[string]any
	if json.Unmarshal(p["input"], &in) != nil {
		return nil
	}
	for _, k := range []string{"file_path", "path", "notebook_path"} {
		if s, ok := in[k].(string); ok && strings.HasPrefix(s, "/") {
			return []location{{Path: s}}
		}
	}
	return nil
}

// diffOf is the ACP diff of an edit whose input says it (Claude Code's
// Edit: file_path, old_string, new_string; Write: file_path, content), or
// nil.
func diffOf(p map[string]json.RawMessage, name string) *diff {
	var in struct {
		Path    string  `json:"file_path"`
		Old     *string `json:"old_string"`
		New     *string `json:"new_string"`
		Content *string `json:"content"`
	}
	if json.Unmarshal(p["input"], &in) != nil || !strings.HasPrefix(in.Path, "/") {
		return nil
	}
	switch {
	case name == "Edit" && in.Old != nil && in.New != nil:
		return &diff{Type: "diff", Path: in.Path, OldText: in.Old, NewText: *in.New}
	case name == "Write" && in.Content != nil:
		return &diff{Type: "diff", Path: in.Path, NewText: *in.Content}
	}
	return nil
}

// outputText is a tool's output as text, when it is a string or a list of
// text blocks.
func outputText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, s != ""
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var b strings.Builder
		for _, x := range blocks {
			if x.Type == "text" {
				b.WriteString(x.Text)
			}
		}
		return b.String(), b.Len() > 0
	}
	return "", false
}
