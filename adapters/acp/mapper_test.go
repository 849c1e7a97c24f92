package acp

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

// frame is one recorded line: {dir, msg}.
type frame struct {
	Dir string      `json:"dir"`
	Msg wireMessage `json:"msg"`
}

func readFrames(t *testing.T, name string) []frame {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "acp", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []frame
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var fr frame
		if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, fr)
	}
	return out
}

// replay feeds the recorded agent->client session/update notifications to
// m, ending a turn at each response, and returns every event.
func replay(t *testing.T, m *mapper, frames []frame) []core.Event {
	t.Helper()
	var out []core.Event
	for _, fr := range frames {
		if fr.Dir != "agent->client" {
			continue
		}
		switch {
		case fr.Msg.Method == "session/update":
			var n sessionNotification
			if err := json.Unmarshal(fr.Msg.Params, &n); err != nil {
				t.Fatal(err)
			}
			out = append(out, m.update(n.Update)...)
		case fr.Msg.Method == "" && len(fr.Msg.ID) > 0:
			out = append(out, m.endTurn()...)
		}
	}
	return out
}

func entriesOf(evs []core.Event) []core.NewEntry {
	var out []core.NewEntry
	for _, ev := range evs {
		if ev.Entry != nil {
			out = append(out, *ev.Entry)
		}
	}
	return out
}

func textOf(t *testing.T, e core.NewEntry) string {
	t.Helper()
	var p struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p.Text
}

func checkValidUnique(t *testing.T, es []core.NewEntry) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range es {
		if err := e.Validate(); err != nil {
			t.Errorf("invalid entry: %v", err)
		}
		if e.NativeID == "" || seen[e.NativeID] {
			t.Errorf("entry %s has empty or repeated NativeID %q", e.Kind, e.NativeID)
		}
		seen[e.NativeID] = true
	}
}

// TestMapRecordedSession: the real agent's chunks of one message become one
// assistant.message per turn; available_commands_update records nothing but
// reveals the compact command and its input hint; the /compact turn, which
// the agent reports with no update at all, records nothing.
func TestMapRecordedSession(t *testing.T) {
	frames := readFrames(t, "acp-frames.jsonl")
	// Up to (not including) the in-process session/load at the end.
	var live []frame
	for _, fr := range frames {
		if fr.Dir == "client->agent" && fr.Msg.Method == "session/load" {
			break
		}
		live = append(live, fr)
	}
	m := newMapper("acp", "cfff2dfa-00be-4f8a-ab44-ee3476c4d73a", "n1", modeLive)
	es := entriesOf(replay(t, m, live))
	checkValidUnique(t, es)
	if len(es) != 2 {
		t.Fatalf("got %d entries, want 2 assistant messages: %+v", len(es), es)
	}
	want := []string{
		`FAKE-REPLY-1: scripted answer to "<system-reminder> As you answer the user's questions, you ca"`,
		"SUMMARY-3: The user asked the fake model to say hello; the assistant replied with scripted text. No files were changed. Next step: none.",
	}
	for i, e := range es {
		if e.Kind != core.KindAssistantMessage || textOf(t, e) != want[i] {
			t.Errorf("entry %d = %s %q, want assistant.message %q", i, e.Kind, textOf(t, e), want[i])
		}
	}
	c, ok := m.compactCommand()
	if !ok {
		t.Fatal("the recorded available_commands_update lists compact, but the mapper did not see it")
	}
	if hint, takes := c.hint(); !takes || hint != "<optional custom summarization instructions>" {
		t.Errorf("compact input hint = %q (takes input %v)", hint, takes)
	}
	if m.sawGauge {
		t.Error("the recording has no usage_update, yet a gauge was seen")
	}
}

// TestMapRecordedLoadReplay: a session/load replay records nothing in a
// resumed live session, and maps to user and assistant messages for
// History, the compaction summary kept as the user message the agent sent.
func TestMapRecordedLoadReplay(t *testing.T) {
	frames := readFrames(t, "acp-frames-load-after-restart.jsonl")
	var load []frame // initialize response, the load replay and its response
	for _, fr := range frames {
		if fr.Dir == "client->agent" && fr.Msg.Method == "session/prompt" {
			break
		}
		load = append(load, fr)
	}
	silent := newMapper("acp", "s", "n2", modeSilent)
	if es := entriesOf(replay(t, silent, load)); len(es) != 0 {
		t.Fatalf("a resumed session recorded the replay again: %+v", es)
	}
	if _, ok := silent.compactCommand(); ok {
		t.Error("compact command seen before it was advertised")
	}

	hist := newMapper("acp", "s", "n3", modeHistory)
	es := entriesOf(replay(t, hist, load))
	checkValidUnique(t, es)
	var kinds []string
	for _, e := range es {
		kinds = append(kinds, string(e.Kind))
	}
	wantKinds := []string{"user.message", "assistant.message", "user.message", "user.message", "user.message", "user.message", "user.message", "assistant.message"}
	if strings.Join(kinds, ",") != strings.Join(wantKinds, ",") {
		t.Fatalf("history kinds = %v, want %v", kinds, wantKinds)
	}
	if textOf(t, es[0]) != "Say hello" || !strings.HasPrefix(textOf(t, es[2]), "This session is being continued") {
		t.Errorf("history texts: %q, %q", textOf(t, es[0]), textOf(t, es[2]))
	}

	// The prompt after the load, in live mode, is one assistant message.
	var after []frame
	seen := false
	for _, fr := range frames {
		if fr.Dir == "client->agent" && fr.Msg.Method == "session/prompt" {
			seen = true
		}
		if seen {
			after = append(after, fr)
		}
	}
	livem := newMapper("acp", "s", "n4", modeLive)
	es = entriesOf(replay(t, livem, after))
	if len(es) != 1 || !strings.HasPrefix(textOf(t, es[0]), "SUMMARY-1: The user asked") {
		t.Fatalf("turn after load: %+v", es)
	}
}

func upd(t *testing.T, m *mapper, s string) []core.Event {
	t.Helper()
	return m.update(json.RawMessage(s))
}

// TestMapToolsUsageAndCompaction covers the updates the recording lacks:
// tool calls, usage gauges, one context.compacted per completed compaction
// with tokens from the readings around it, and unknown or malformed
// updates kept as harness.event.
func TestMapToolsUsageAndCompaction(t *testing.T) {
	m := newMapper("my-acp", "sess-1", "n5", modeLive)
	var evs []core.Event
	evs = append(evs, upd(t, m, `{"sessionUpdate":"usage_update","used":53000,"size":200000}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Let me "}}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"look."}}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read a.go","kind":"read","status":"pending","rawInput":{"path":"a.go"}}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"in_progress"}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","rawOutput":"package a"}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"plan","entries":[{"content":"read","priority":"high","status":"pending"}]}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"compaction_update","compactionId":"cmp_001","status":"in_progress"}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"compaction_summary_chunk","compactionId":"cmp_001","content":{"type":"text","text":"## Retained"}}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"compaction_update","compactionId":"cmp_001","status":"completed","summary":[{"type":"text","text":"kept: a.go"}]}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"usage_update","used":9000,"size":200000}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"brand_new_update","x":1}`)...)
	evs = append(evs, upd(t, m, `{"no discriminator":true}`)...)
	evs = append(evs, upd(t, m, `not json`)...)
	evs = append(evs, m.endTurn()...)

	var gauges []core.Gauge
	for _, ev := range evs {
		if ev.Gauge != nil {
			gauges = append(gauges, *ev.Gauge)
		}
	}
	if len(gauges) != 2 || gauges[0] != (core.Gauge{Used: 53000, Size: 200000}) || gauges[1].Used != 9000 {
		t.Errorf("gauges = %+v", gauges)
	}
	es := entriesOf(evs)
	checkValidUnique(t, es)
	var kinds []string
	for _, e := range es {
		kinds = append(kinds, string(e.Kind))
	}
	want := "assistant.message,tool.started,tool.completed,plan.updated,context.compacted,harness.event,harness.event,harness.event"
	if strings.Join(kinds, ",") != want {
		t.Fatalf("kinds = %v\nwant %s", kinds, want)
	}
	if textOf(t, es[0]) != "Let me look." {
		t.Errorf("assistant text %q", textOf(t, es[0]))
	}
	var c core.Compacted
	if err := json.Unmarshal(es[4].Payload, &c); err != nil {
		t.Fatal(err)
	}
	if c.Harness != "my-acp" || c.Trigger != core.TriggerUnknown || c.PreTokens == nil || *c.PreTokens != 53000 ||
		c.PostTokens == nil || *c.PostTokens != 9000 || c.Summary != "kept: a.go" || c.NativeID != "acp:sess-1:compaction:cmp_001" || len(c.Raw) == 0 {
		t.Errorf("compacted = %+v (pre %v post %v)", c, c.PreTokens, c.PostTokens)
	}
	if es[4].NativeID != c.NativeID {
		t.Errorf("entry NativeID %q != compacted NativeID %q", es[4].NativeID, c.NativeID)
	}
}

// TestMapCompactionWithoutReadingAfter: a completed compaction with no usage
// reading before the turn ends is recorded once at the turn's end, without
// post tokens; failed compactions are kept as data, never as compacted.
func TestMapCompactionWithoutReadingAfter(t *testing.T) {
	m := newMapper("acp", "s", "n6", modeLive)
	var evs []core.Event
	evs = append(evs, upd(t, m, `{"sessionUpdate":"compaction_update","compactionId":"c0","status":"failed","error":"too short"}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed"}`)...)
	evs = append(evs, m.endTurn()...)
	evs = append(evs, m.endTurn()...)
	es := entriesOf(evs)
	if len(es) != 2 || es[0].Kind != core.KindHarnessEvent || es[1].Kind != core.KindContextCompacted {
		t.Fatalf("entries %+v", es)
	}
	var c core.Compacted
	_ = json.Unmarshal(es[1].Payload, &c)
	if c.PreTokens != nil || c.PostTokens != nil {
		t.Errorf("tokens invented: pre %v post %v", c.PreTokens, c.PostTokens)
	}
}

// TestMapEditToolCreatesArtifacts: a completed tool_call of kind edit names
// its files (locations and diff content) as artifact.created; a failed one
// and other kinds do not.
func TestMapEditToolCreatesArtifacts(t *testing.T) {
	m := newMapper("my-acp", "sess-1", "n6", modeLive)
	var evs []core.Event
	evs = append(evs, upd(t, m, `{"sessionUpdate":"tool_call","toolCallId":"e1","title":"Edit a.go","kind":"edit","status":"pending","locations":[{"path":"/p/a.go"}]}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"tool_call_update","toolCallId":"e1","status":"completed","content":[{"type":"diff","path":"/p/b.go","oldText":"x","newText":"y"}]}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"tool_call","toolCallId":"e2","title":"Edit c.go","kind":"edit","status":"pending","locations":[{"path":"/p/c.go"}]}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"tool_call_update","toolCallId":"e2","status":"failed"}`)...)
	evs = append(evs, upd(t, m, `{"sessionUpdate":"tool_call","toolCallId":"r1","title":"Read d.go","kind":"read","status":"completed","locations":[{"path":"/p/d.go"}]}`)...)
	es := entriesOf(evs)
	checkValidUnique(t, es)
	var paths []string
	for _, e := range es {
		if e.Kind == core.KindArtifactCreated {
			var p struct {
				Path string `json:"path"`
			}
			json.Unmarshal(e.Payload, &p)
			paths = append(paths, p.Path)
		}
	}
	if strings.Join(paths, ",") != "/p/a.go,/p/b.go" {
		t.Fatalf("artifacts %v, want /p/a.go and /p/b.go", paths)
	}
}

// TestTurnUsage: a turn's usage.reported entry from the session/prompt
// result's usage, made disjoint by its totalTokens (thought tokens counted
// apart from output are added to output; cache reads counted within input
// are taken out of it), with the growth of usage_update's cumulative
// US-dollar cost since the turn before as its cost; a turn that reports
// neither records nothing, and a cost in another currency is not kept.
func TestTurnUsage(t *testing.T) {
	m := newMapper("acp", "s", "n", modeLive)
	parse := func(evs []core.Event) core.Usage {
		t.Helper()
		if len(evs) != 1 || evs[0].Entry == nil || evs[0].Entry.Kind != core.KindUsageReported {
			t.Fatalf("events %+v: want one usage.reported", evs)
		}
		u, _ := core.ParseUsage(evs[0].Entry.Payload)
		return u
	}
	// Disjoint counts (claude-agent-acp), cumulative cost 0.5 then 0.75.
	m.update(json.RawMessage(`{"sessionUpdate":"usage_update","used":10,"size":100,"cost":{"amount":0.5,"currency":"USD"}}`))
	u := parse(m.turnUsage(json.RawMessage(`{"stopReason":"end_turn","usage":{"totalTokens":1700,"inputTokens":1000,"outputTokens":100,"cachedReadTokens":500,"cachedWriteTokens":100}}`), "opus"))
	if u.InputTokens != 1000 || u.OutputTokens != 100 || u.CacheReadTokens != 500 || u.CacheWriteTokens != 100 ||
		u.CostUSD == nil || *u.CostUSD != 0.5 || u.Model != "opus" || u.Scope != "turn" {
		t.Errorf("first turn %+v", u)
	}
	m.update(json.RawMessage(`{"sessionUpdate":"usage_update","used":20,"size":100,"cost":{"amount":0.75,"currency":"USD"}}`))
	u = parse(m.turnUsage(json.RawMessage(`{"stopReason":"end_turn","usage":{"totalTokens":1100,"inputTokens":1000,"outputTokens":100}}`), "opus"))
	if u.CostUSD == nil || *u.CostUSD != 0.25 {
		t.Errorf("second turn cost %v, want the growth 0.25", u.CostUSD)
	}
	// Cache reads within input, thoughts apart from output.
	u = parse(m.turnUsage(json.RawMessage(`{"stopReason":"end_turn","usage":{"totalTokens":1150,"inputTokens":1000,"outputTokens":100,"thoughtTokens":50,"cachedReadTokens":400}}`), ""))
	if u.InputTokens != 600 || u.OutputTokens != 150 || u.CacheReadTokens != 400 || u.CostUSD != nil {
		t.Errorf("overlapping counts read as %+v, want input 600, output 150, cache reads 400, no cost (it did not grow)", u)
	}
	// Thoughts within output: kept as they are.
	u = parse(m.turnUsage(json.RawMessage(`{"stopReason":"end_turn","usage":{"totalTokens":1100,"inputTokens":1000,"outputTokens":100,"thoughtTokens":50}}`), ""))
	if u.InputTokens != 1000 || u.OutputTokens != 100 {
		t.Errorf("thoughts within output read as %+v", u)
	}
	if evs := m.turnUsage(json.RawMessage(`{"stopReason":"end_turn"}`), ""); len(evs) != 0 {
		t.Errorf("a turn with no usage recorded %+v", evs)
	}
	m.update(json.RawMessage(`{"sessionUpdate":"usage_update","used":20,"size":100,"cost":{"amount":9,"currency":"EUR"}}`))
	if evs := m.turnUsage(nil, ""); len(evs) != 0 {
		t.Errorf("a cost in EUR recorded %+v", evs)
	}
}
