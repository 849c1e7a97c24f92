package claudecode

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// editTools are Claude Code's tools that write a file, with the input
// member naming it.
var editTools = map[string]string{
	"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path",
}

// workerTools run a sub-agent whose final result is the tool's result.
var workerTools = map[string]bool{"Task": true, "Agent": true}

// maxWorkerResult bounds the text of a sub-agent's result kept in a
// worker.result entry.
const maxWorkerResult = 8000

// evidence turns completed tool calls into the entries Bridge's checkpoint
// controller reads: a successful Edit / Write / MultiEdit / NotebookEdit
// becomes artifact.created {path}; a Task (Agent) sub-agent's final result
// becomes worker.result {status, result, filesChanged}; a successful plan
// tool call (TodoWrite, TaskCreate, TaskUpdate) becomes plan.updated. It remembers the calls
// started and not completed; one per live process or import.
type evidence struct {
	open map[string]openTool // by tool id
}

type openTool struct {
	name   string
	input  json.RawMessage // a plan tool's input
	path   string          // the file an edit tool writes
	parent string          // the sub-agent call it runs under
	files  []string        // files written under a sub-agent call
}

func newEvidence() *evidence { return &evidence{open: map[string]openTool{}} }

// add returns evs with the evidence entries they imply appended after the
// tool.completed entry they follow from.
func (v *evidence) add(evs []core.Event) []core.Event {
	var out []core.Event
	for _, ev := range evs {
		out = append(out, ev)
		e := ev.Entry
		if e == nil {
			continue
		}
		switch e.Kind {
		case core.KindToolStarted:
			var p struct {
				ToolID string          `json:"toolId"`
				Name   string          `json:"name"`
				Input  json.RawMessage `json:"input"`
				Parent string          `json:"parentToolUseId"`
			}
			if json.Unmarshal(e.Payload, &p) != nil || p.ToolID == "" {
				continue
			}
			t := openTool{name: p.Name, parent: p.Parent}
			if planTools[p.Name] && p.Parent == "" {
				t.input = p.Input
			}
			if key, ok := editTools[p.Name]; ok {
				var in map[string]json.RawMessage
				if json.Unmarshal(p.Input, &in) == nil {
					_ = json.Unmarshal(in[key], &t.path)
				}
			}
			if !workerTools[p.Name] && t.path == "" && t.input == nil {
				continue
			}
			v.open[p.ToolID] = t
		case core.KindToolCompleted:
			var p struct {
				ToolID  string `json:"toolId"`
				IsError bool   `json:"isError"`
				Output  string `json:"output"`
			}
			if json.Unmarshal(e.Payload, &p) != nil {
				continue
			}
			t, ok := v.open[p.ToolID]
			if !ok {
				continue
			}
			if workerTools[t.name] && !p.IsError && strings.HasPrefix(p.Output, asyncAgentPrefix) {
				// A background sub-agent: its final result comes later, in
				// a system/task_notification.
				continue
			}
			delete(v.open, p.ToolID)
			if p.IsError {
				continue
			}
			switch {
			case t.input != nil:
				if plan, ok := planOf(t.name, t.input, p.Output); ok {
					pe := plan.Entry(e.NativeID + ":plan")
					out = append(out, core.Event{Entry: &pe})
				}
			case t.path != "":
				a := core.ArtifactCreatedPayload{Path: t.path, Tool: t.name, ToolID: p.ToolID, ParentToolUseID: t.parent}
				if t.parent != "" {
					if w, ok := v.open[t.parent]; ok {
						w.files = appendNew(w.files, t.path)
						v.open[t.parent] = w
					}
				}
				out = append(out, core.Event{Entry: &core.NewEntry{Kind: core.KindArtifactCreated,
					Payload: core.Payload(a), NativeID: e.NativeID + ":artifact"}})
			case workerTools[t.name]:
				text := p.Output
				if r := []rune(text); len(r) > maxWorkerResult {
					text = string(r[:maxWorkerResult])
				}
				w := core.WorkerResultPayload{Status: "completed", Result: text, Tool: t.name, ToolID: p.ToolID,
					FilesChanged: nonNilStrings(t.files)}
				out = append(out, core.Event{Entry: &core.NewEntry{Kind: core.KindWorkerResult,
					Payload: core.Payload(w), NativeID: e.NativeID + ":worker"}})
			}
		case core.KindHarnessEvent:
			if w, ok := v.taskNotification(e.Payload); ok {
				out = append(out, core.Event{Entry: &core.NewEntry{Kind: core.KindWorkerResult,
					Payload: core.Payload(w), NativeID: e.NativeID + ":worker"}})
			}
		}
	}
	return out
}

// asyncAgentPrefix begins the tool result of a sub-agent Claude Code runs
// in the background.
const asyncAgentPrefix = "Async agent launched"

// taskNotification reads a system/task_notification (a background
// sub-agent ended) kept as a harness.event: its summary is the sub-agent's
// final report.
func (v *evidence) taskNotification(payload json.RawMessage) (core.WorkerResultPayload, bool) {
	if !bytes.Contains(payload, []byte("task_notification")) {
		return core.WorkerResultPayload{}, false
	}
	var h struct {
		Type string `json:"type"`
		Raw  struct {
			TaskID    string `json:"task_id"`
			ToolUseID string `json:"tool_use_id"`
			Status    string `json:"status"`
			Summary   string `json:"summary"`
		} `json:"raw"`
	}
	if json.Unmarshal(payload, &h) != nil || h.Type != "system/task_notification" || h.Raw.Status == "" {
		return core.WorkerResultPayload{}, false
	}
	t := v.open[h.Raw.ToolUseID]
	delete(v.open, h.Raw.ToolUseID)
	text := h.Raw.Summary
	if r := []rune(text); len(r) > maxWorkerResult {
		text = string(r[:maxWorkerResult])
	}
	return core.WorkerResultPayload{Status: h.Raw.Status, Result: text, TaskID: h.Raw.TaskID,
		FilesChanged: nonNilStrings(t.files), ToolID: h.Raw.ToolUseID, Tool: t.name}, true
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
