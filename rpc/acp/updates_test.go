package acp

import (
	"encoding/json"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

func entry(kind core.Kind, payload string) core.Entry {
	return core.Entry{ID: "e_" + string(kind), Kind: kind, Payload: json.RawMessage(payload)}
}

// The record's entries as an ACP client sees them: each harness's way of
// keeping a thought is a thought, a partial plan update is sent as the
// whole plan, a tool that finished without a start the client saw is one
// tool_call, a compaction is a compaction_update only for a client that
// takes it, and Bridge's own checkpoint exchange is not shown.
func TestUpdatesForEntries(t *testing.T) {
	v := newView(false)
	kindOf := func(us []update) string {
		if len(us) != 1 {
			t.Fatalf("updates %v, want one", us)
		}
		return us[0].SessionUpdate
	}
	for _, p := range []string{`{"type":"assistant/thinking","text":"hm"}`, `{"type":"agent_thought","text":"hm"}`,
		`{"type":"part.reasoning","raw":{"type":"reasoning","text":"hm"}}`} {
		if k := kindOf(v.updatesFor(entry(core.KindHarnessEvent, p), false)); k != "agent_thought_chunk" {
			t.Errorf("%s: %s, want agent_thought_chunk", p, k)
		}
	}
	if us := v.updatesFor(entry(core.KindHarnessEvent, `{"type":"system/init","raw":{}}`), false); len(us) != 0 {
		t.Errorf("a harness event that is no thought was shown: %v", us)
	}
	if us := v.updatesFor(entry(core.KindUserMessage, `{"text":"hi"}`), false); len(us) != 0 {
		t.Errorf("the user's own prompt was echoed live: %v", us)
	}
	if k := kindOf(v.updatesFor(entry(core.KindUserMessage, `{"text":"hi"}`), true)); k != "user_message_chunk" {
		t.Errorf("replayed user message: %s", k)
	}

	v.updatesFor(entry(core.KindPlanUpdated, `{"steps":[{"id":"1","text":"a","status":"pending"},{"id":"2","text":"b","status":"pending"}]}`), false)
	us := v.updatesFor(entry(core.KindPlanUpdated, `{"partial":true,"steps":[{"id":"2","status":"in_progress"},{"id":"3","text":"c","status":"pending"}]}`), false)
	got, _ := json.Marshal(us[0].Entries)
	if want := `[{"content":"a","priority":"medium","status":"pending"},{"content":"b","priority":"medium","status":"in_progress"},{"content":"c","priority":"medium","status":"pending"}]`; string(got) != want {
		t.Errorf("plan after a partial update: %s, want %s", got, want)
	}

	us = v.updatesFor(entry(core.KindToolCompleted, `{"toolId":"t1","name":"Bash","output":"refused","isError":true}`), false)
	if us[0].SessionUpdate != "tool_call" || us[0].Status != "failed" || us[0].Kind != "execute" {
		t.Errorf("a refused tool: %v", us[0])
	}
	us = v.updatesFor(entry(core.KindToolStarted, `{"toolId":"t2","name":"Edit","input":{"file_path":"/a.go","old_string":"x","new_string":"y"}}`), false)
	if c, _ := json.Marshal(us[0].Content); string(c) != `[{"newText":"y","oldText":"x","path":"/a.go","type":"diff"}]` || us[0].Kind != "edit" {
		t.Errorf("an Edit: %v", us[0])
	}
	if k := kindOf(v.updatesFor(entry(core.KindToolCompleted, `{"toolId":"t2","output":"ok"}`), false)); k != "tool_call_update" {
		t.Errorf("a finished edit: %s", k)
	}

	compacted := entry(core.KindContextCompacted, `{"harness":"fake","trigger":"manual","summary":"s"}`)
	if k := kindOf(v.updatesFor(compacted, false)); k != "agent_message_chunk" {
		t.Errorf("compaction for a client without the capability: %s", k)
	}
	if k := kindOf(newView(true).updatesFor(compacted, false)); k != "compaction_update" {
		t.Errorf("compaction for a client with the capability: %s", k)
	}

	v.updatesFor(entry(core.KindCompactionRequest, `{"reason":"manual","attempt":1}`), false)
	if us := v.updatesFor(entry(core.KindAssistantMessage, `{"text":"{\"summary\":\"x\"}"}`), false); len(us) != 0 {
		t.Errorf("Bridge's own checkpoint exchange was shown: %v", us)
	}
	v.updatesFor(entry(core.KindCheckpoint, `{"summary":"x"}`), false)
	if k := kindOf(v.updatesFor(entry(core.KindAssistantMessage, `{"text":"back to work"}`), false)); k != "agent_message_chunk" {
		t.Errorf("after the checkpoint: %s", k)
	}
}
