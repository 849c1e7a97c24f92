package claudecode

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

// mapClaudeLines runs stream-json lines through the live mapping (mapStream and
// the evidence tracker) and returns the entries.
func mapClaudeLines(t *testing.T, lines ...string) []core.NewEntry {
	t.Helper()
	v := newEvidence()
	var out []core.NewEntry
	for _, l := range lines {
		var m streamMsg
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("bad test line %s: %v", l, err)
		}
		for _, ev := range v.add(mapStream(&m, []byte(l))) {
			if ev.Entry != nil {
				out = append(out, *ev.Entry)
			}
		}
	}
	return out
}

func ofKind(es []core.NewEntry, k core.Kind) []map[string]any {
	var out []map[string]any
	for _, e := range es {
		if e.Kind == k {
			var m map[string]any
			json.Unmarshal(e.Payload, &m)
			out = append(out, m)
		}
	}
	return out
}

func TestPlanAndEvidenceFromClaudeTools(t *testing.T) {
	es := mapClaudeLines(t,
		`{"type":"assistant","uuid":"a1","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"TodoWrite","input":{"todos":[{"content":"write parser","status":"completed","activeForm":"Writing"},{"content":"add tests","status":"in_progress","activeForm":"Adding"}]}}]}}`,
		`{"type":"user","uuid":"u1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"Todos have been modified successfully"}]}}`,
		`{"type":"assistant","uuid":"a2","message":{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Edit","input":{"file_path":"/p/src/parse.go","old_string":"a","new_string":"b"}},{"type":"tool_use","id":"t3","name":"Write","input":{"file_path":"/p/src/fail.go","content":"x"}}]}}`,
		`{"type":"user","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"ok"},{"type":"tool_result","tool_use_id":"t3","content":"denied","is_error":true}]}}`,
		`{"type":"assistant","uuid":"a3","message":{"role":"assistant","content":[{"type":"tool_use","id":"t4","name":"Task","input":{"description":"review","prompt":"review it","subagent_type":"general-purpose"}}]}}`,
		`{"type":"assistant","uuid":"a4","parent_tool_use_id":"t4","message":{"role":"assistant","content":[{"type":"tool_use","id":"t5","name":"NotebookEdit","input":{"notebook_path":"/p/nb.ipynb","new_source":"x"}}]}}`,
		`{"type":"user","uuid":"u3","parent_tool_use_id":"t4","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t5","content":"ok"}]}}`,
		`{"type":"user","uuid":"u4","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t4","content":[{"type":"text","text":"The review found nothing to change."}]}]}}`,
		`{"type":"assistant","uuid":"a5","message":{"role":"assistant","content":[{"type":"tool_use","id":"t6","name":"TaskCreate","input":{"subject":"Ship it","description":"ship","activeForm":"Shipping"}},{"type":"tool_use","id":"t7","name":"TaskUpdate","input":{"taskId":"1","status":"completed"}},{"type":"tool_use","id":"t8","name":"TaskUpdate","input":{"taskId":"9","status":"completed"}},{"type":"tool_use","id":"t9","name":"TodoWrite","input":{"todos":[]}}]}}`,
		`{"type":"user","uuid":"u5","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t6","content":"Task #1 created successfully: Ship it"},{"type":"tool_result","tool_use_id":"t7","content":"Updated task #1 status"},{"type":"tool_result","tool_use_id":"t8","content":"Task not found"},{"type":"tool_result","tool_use_id":"t9","content":"<tool_use_error>Error: No such tool available: TodoWrite.</tool_use_error>","is_error":true}]}}`,
	)
	plans := ofKind(es, core.KindPlanUpdated)
	if len(plans) != 3 {
		t.Fatalf("plan.updated entries %v, want TodoWrite's, TaskCreate's and the successful TaskUpdate's", plans)
	}
	var tr core.PlanTracker
	done := 0
	for _, e := range es {
		if e.Kind == core.KindPlanUpdated {
			p, _ := core.ParsePlan(e.Payload)
			done += tr.Apply(p)
		}
	}
	if done != 2 {
		t.Errorf("%d plan steps completed, want 2 (the parser, then task #1)", done)
	}
	if b, _ := json.Marshal(plans[1]); !strings.Contains(string(b), `"id":"1"`) || !strings.Contains(string(b), "Ship it") {
		t.Errorf("TaskCreate plan %s: want task #1, Ship it", b)
	}
	if b, _ := json.Marshal(plans[0]); !strings.Contains(string(b), `"status":"completed","text":"write parser"`) || plans[0]["source"] != "TodoWrite" {
		t.Errorf("TodoWrite plan %s", b)
	}
	if plans[2]["partial"] != true || plans[2]["source"] != "TaskUpdate" {
		t.Errorf("TaskUpdate plan %v", plans[2])
	}
	arts := ofKind(es, core.KindArtifactCreated)
	if len(arts) != 2 || arts[0]["path"] != "/p/src/parse.go" || arts[1]["path"] != "/p/nb.ipynb" || arts[1]["parentToolUseId"] != "t4" {
		t.Fatalf("artifact.created %v: want parse.go (Edit) and nb.ipynb (the sub-agent's NotebookEdit); never the failed Write", arts)
	}
	ws := ofKind(es, core.KindWorkerResult)
	if len(ws) != 1 || ws[0]["status"] != "completed" || ws[0]["result"] != "The review found nothing to change." {
		t.Fatalf("worker.result %v", ws)
	}
	if fc, _ := json.Marshal(ws[0]["filesChanged"]); string(fc) != `["/p/nb.ipynb"]` {
		t.Errorf("worker.result filesChanged %s", fc)
	}
	for _, e := range es {
		if err := e.Validate(); err != nil {
			t.Errorf("entry %s: %v", e.Kind, err)
		}
		if e.NativeID == "" {
			t.Errorf("entry %s without a native id", e.Kind)
		}
	}
}

// TestBackgroundAgentResult: a sub-agent Claude Code runs in the background
// reports "Async agent launched" as its tool result; the worker.result is
// its final report from the later system/task_notification.
func TestBackgroundAgentResult(t *testing.T) {
	es := mapClaudeLines(t,
		`{"type":"assistant","uuid":"a1","message":{"role":"assistant","content":[{"type":"tool_use","id":"ag1","name":"Agent","input":{"description":"review","prompt":"review it","subagent_type":"general-purpose"}}]}}`,
		`{"type":"user","uuid":"u1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"ag1","content":"Async agent launched successfully.\nagentId: a1 (internal ID)"}]}}`,
		`{"type":"assistant","uuid":"a2","parent_tool_use_id":"ag1","message":{"role":"assistant","content":[{"type":"tool_use","id":"w1","name":"Write","input":{"file_path":"/p/report.md","content":"x"}}]}}`,
		`{"type":"user","uuid":"u2","parent_tool_use_id":"ag1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"w1","content":"ok"}]}}`,
		`{"type":"system","subtype":"task_notification","task_id":"a1","tool_use_id":"ag1","status":"completed","summary":"FINAL: nothing to change","uuid":"n1","session_id":"s"}`,
	)
	ws := ofKind(es, core.KindWorkerResult)
	if len(ws) != 1 || ws[0]["result"] != "FINAL: nothing to change" || ws[0]["status"] != "completed" || ws[0]["toolId"] != "ag1" {
		t.Fatalf("worker.result %v: want one, with the notification's summary", ws)
	}
	if fc, _ := json.Marshal(ws[0]["filesChanged"]); string(fc) != `["/p/report.md"]` {
		t.Errorf("filesChanged %s", fc)
	}
}
