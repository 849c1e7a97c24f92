package opencode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

const recordedSession = "ses_dd58578f9ffej93Qi5eec5b5Bk"

func testdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "opencode", name))
	if err != nil {
		t.Fatalf("read recording: %v", err)
	}
	return b
}

// recordedEvents parses a recorded SSE file (either stream's framing).
func recordedEvents(t *testing.T, name string) []event {
	t.Helper()
	var evs []event
	err := readSSE(strings.NewReader(string(testdata(t, name))), func(data []byte) {
		ev, ok, err := parseEventData(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ok {
			evs = append(evs, ev)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// replay feeds the events of one session through a mapper.
func replay(t *testing.T, evs []event, sessionID string) (entries []core.NewEntry, models []string) {
	t.Helper()
	m := newEventMapper(sessionID)
	for _, ev := range evs {
		if ev.sessionID() != sessionID {
			continue
		}
		for _, out := range m.handle(ev) {
			if out.Entry != nil {
				entries = append(entries, *out.Entry)
			}
			if out.Model != "" {
				models = append(models, out.Model)
			}
		}
	}
	return entries, models
}

func kinds(es []core.NewEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, string(e.Kind))
	}
	return out
}

func payload(t *testing.T, e core.NewEntry) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Payload, &m); err != nil {
		t.Fatalf("payload of %s: %v", e.Kind, err)
	}
	return m
}

// checkEntries asserts what every emitted entry must satisfy.
func checkEntries(t *testing.T, es []core.NewEntry) {
	t.Helper()
	seen := map[string]bool{}
	for i, e := range es {
		if err := e.Validate(); err != nil {
			t.Errorf("entry %d (%s) invalid: %v", i, e.Kind, err)
		}
		if e.NativeID == "" {
			t.Errorf("entry %d (%s) has no NativeID", i, e.Kind)
		}
		if seen[e.NativeID] {
			t.Errorf("entry %d (%s) repeats NativeID %s", i, e.Kind, e.NativeID)
		}
		seen[e.NativeID] = true
	}
}

// withoutUsage drops usage.reported entries (for tests of the other
// mappings; usage_test.go tests the ledger's).
func withoutUsage(es []core.NewEntry) []core.NewEntry {
	var out []core.NewEntry
	for _, e := range es {
		if e.Kind != core.KindUsageReported {
			out = append(out, e)
		}
	}
	return out
}

func ofKind(es []core.NewEntry, k core.Kind) []core.NewEntry {
	var out []core.NewEntry
	for _, e := range es {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func TestMapPromptAndSummarizeRecording(t *testing.T) {
	evs := recordedEvents(t, "event-stream-prompt-and-summarize.recorded.sse")
	if len(evs) < 40 || evs[0].Type != "server.connected" {
		t.Fatalf("parsed %d events, first %q", len(evs), evs[0].Type)
	}
	es, models := replay(t, evs, recordedSession)
	checkEntries(t, es)
	// Each step-finish part (the turn's, the summary's) reports its usage.
	if u := ofKind(es, core.KindUsageReported); len(u) != 2 {
		t.Errorf("%d usage.reported entries, want one per step-finish part (2)", len(u))
	}
	es = withoutUsage(es)
	want := []string{"assistant.message", "artifact.created", "artifact.created",
		"artifact.created", "artifact.created", "context.compacted"}
	if got := kinds(es); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("kinds = %v, want %v", got, want)
	}
	if p := payload(t, es[0]); p["text"] != "reply 8" || es[0].NativeID != "prt_22a7adc440011wdmUFNh14FBBP" {
		t.Errorf("assistant.message = %v (%s)", p, es[0].NativeID)
	}
	if p := payload(t, es[1]); p["path"] != "/home/user/project/event.sse" {
		t.Errorf("artifact = %v", p)
	}
	var c core.Compacted
	if err := json.Unmarshal(es[5].Payload, &c); err != nil {
		t.Fatal(err)
	}
	if c.Harness != "opencode" || c.Trigger != core.TriggerManual {
		t.Errorf("compacted harness/trigger = %q/%q", c.Harness, c.Trigger)
	}
	if c.PreTokens == nil || *c.PreTokens != 45000 || c.PostTokens != nil {
		t.Errorf("tokens pre=%v post=%v, want 45000 and unknown", c.PreTokens, c.PostTokens)
	}
	if c.NativeID != "prt_22a7ae587001rMTT6MUc8PyqV7" || es[5].NativeID != c.NativeID {
		t.Errorf("compacted native id = %q / %q", c.NativeID, es[5].NativeID)
	}
	if c.Summary != "<summary>Mock summary #9</summary>" {
		t.Errorf("summary = %q", c.Summary)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(c.Raw, &raw); err != nil || raw["compactionPart"] == nil || raw["event"] == nil {
		t.Errorf("raw keeps the harness fields: %s (%v)", c.Raw, err)
	}
	for _, e := range es {
		if e.Kind == core.KindAssistantMessage && strings.Contains(string(e.Payload), "Mock summary") {
			t.Error("the summary text was also recorded as an assistant message")
		}
		if e.Kind == core.KindUserMessage {
			t.Error("the live mapping echoed the user's prompt")
		}
	}
	if len(models) != 1 || models[0] != "anthropic/claude-sonnet-4-5" {
		t.Errorf("models = %v", models)
	}
}

func TestMapAutoAndUnknownTrigger(t *testing.T) {
	evs := recordedEvents(t, "event-stream-prompt-and-summarize.recorded.sse")
	for i, ev := range evs {
		if ev.Type == "message.part.updated" && strings.Contains(string(ev.Properties), `"type":"compaction"`) {
			evs[i].Properties = json.RawMessage(strings.Replace(string(ev.Properties), `"auto":false`, `"auto":true,"overflow":true`, 1))
		}
	}
	es, _ := replay(t, evs, recordedSession)
	got := ofKind(es, core.KindContextCompacted)
	if len(got) != 1 {
		t.Fatalf("%d context.compacted entries, want 1", len(got))
	}
	if p := payload(t, got[0]); p["trigger"] != "auto" {
		t.Errorf("trigger = %v, want auto", p["trigger"])
	}

	// A session.compacted with no compaction part seen: one entry, trigger
	// unknown, the event id as native id.
	m := newEventMapper("ses_x")
	out := m.handle(event{ID: "evt_1", Type: "session.compacted", Properties: json.RawMessage(`{"sessionID":"ses_x"}`)})
	if len(out) != 1 || out[0].Entry == nil {
		t.Fatalf("got %v", out)
	}
	if p := payload(t, *out[0].Entry); p["trigger"] != "unknown" || out[0].Entry.NativeID != "evt_1" {
		t.Errorf("bare compaction = %v (%s)", p, out[0].Entry.NativeID)
	}
}

func TestMapToolTurnRecording(t *testing.T) {
	evs := recordedEvents(t, "global-event-tool-turn.recorded.sse")
	sid := ""
	for _, ev := range evs {
		if ev.Type == "session.created" {
			sid = ev.sessionID()
			if ev.Directory != "/home/user/project" {
				t.Errorf("global envelope directory = %q", ev.Directory)
			}
		}
	}
	es, _ := replay(t, evs, sid)
	checkEntries(t, es)
	if u := ofKind(es, core.KindUsageReported); len(u) != 2 {
		t.Errorf("%d usage.reported entries, want one per model request of the tool turn (2)", len(u))
	}
	es = withoutUsage(es)
	want := "tool.started,tool.completed,artifact.created,assistant.message"
	if got := strings.Join(kinds(es), ","); got != want {
		t.Fatalf("kinds = %s, want %s", got, want)
	}
	st, done := payload(t, es[0]), payload(t, es[1])
	if st["toolId"] != "call_w1" || st["name"] != "write" || done["toolId"] != "call_w1" || done["status"] != "completed" {
		t.Errorf("tool entries = %v / %v", st, done)
	}
	if !strings.Contains(done["output"].(string), "Wrote file") {
		t.Errorf("tool output = %v", done["output"])
	}
	if p := payload(t, es[2]); p["path"] != "/home/user/project/hello.txt" {
		t.Errorf("artifact = %v", p)
	}
	if p := payload(t, es[3]); p["text"] != "OK" {
		t.Errorf("assistant = %v", p)
	}
}

func TestMapErrorsRecording(t *testing.T) {
	evs := recordedEvents(t, "global-event-errors.recorded.sse")
	sid := ""
	for _, ev := range evs {
		if ev.Type == "session.created" {
			sid = ev.sessionID()
		}
	}
	es, _ := replay(t, evs, sid)
	checkEntries(t, es)
	st := ofKind(es, core.KindSessionStatus)
	if len(st) != 2 {
		t.Fatalf("session.status entries = %d (%v), want 2", len(st), kinds(es))
	}
	first, second := payload(t, st[0]), payload(t, st[1])
	if first["status"] != "error" || first["errorName"] != "APIError" || first["message"] != "fake model: scripted status 400" {
		t.Errorf("model error = %v", first)
	}
	if second["status"] != "cancelled" || second["errorName"] != "MessageAbortedError" {
		t.Errorf("abort = %v", second)
	}
	if len(ofKind(es, core.KindAssistantMessage)) != 0 {
		t.Errorf("failed turns produced assistant messages: %v", kinds(es))
	}
}

func TestMapUnknownIsKept(t *testing.T) {
	m := newEventMapper("ses_a")
	evs := []event{
		{ID: "evt_u1", Type: "permission.asked", Properties: json.RawMessage(`{"sessionID":"ses_a","path":"a.go"}`), Raw: json.RawMessage(`{"x":1}`)},
		{ID: "evt_u2", Type: "message.part.updated", Properties: json.RawMessage(`{"sessionID":"ses_a","part":{"id":"prt_r","messageID":"msg_1","type":"retry","attempt":2}}`)},
		{ID: "evt_u3", Type: "message.part.updated", Properties: json.RawMessage(`{"sessionID":"ses_a","part":"not a part"}`)},
		{ID: "evt_u4", Type: "message.updated", Properties: json.RawMessage(`{"sessionID":"ses_a"}`)},
		{ID: "evt_q", Type: "server.heartbeat", Properties: json.RawMessage(`{}`)},
		{ID: "evt_d", Type: "message.part.delta", Properties: json.RawMessage(`{"sessionID":"ses_a","delta":"x"}`)},
	}
	var es []core.NewEntry
	for _, ev := range evs {
		for _, o := range m.handle(ev) {
			es = append(es, *o.Entry)
		}
	}
	checkEntries(t, es)
	if got := strings.Join(kinds(es), ","); got != "harness.event,harness.event,harness.event,harness.event" {
		t.Fatalf("kinds = %s", got)
	}
	if p := payload(t, es[0]); p["type"] != "permission.asked" || es[0].NativeID != "evt_u1" {
		t.Errorf("unknown event = %v", p)
	}
	if p := payload(t, es[1]); p["type"] != "part.retry" || es[1].NativeID != "prt_r" {
		t.Errorf("unknown part = %v", p)
	}
}

func TestParseEventDataShapes(t *testing.T) {
	for _, line := range strings.Split(strings.TrimSpace(string(testdata(t, "global-event-envelopes.recorded.jsonl"))), "\n") {
		ev, ok, err := parseEventData([]byte(line))
		if err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if strings.Contains(line, `"type":"sync"`) {
			if ok {
				t.Errorf("sync envelope was not skipped")
			}
			continue
		}
		if !ok || ev.Type == "" || ev.ID == "" {
			t.Errorf("envelope not read: %+v", ev)
		}
	}
	for _, bad := range []string{`not json`, `{"payload":{"properties":{}}}`, `[1,2]`} {
		if _, _, err := parseEventData([]byte(bad)); err == nil {
			t.Errorf("parseEventData(%q) succeeded", bad)
		}
	}
}

func TestHistoryFromStoredMessages(t *testing.T) {
	var msgs []storedMessage
	if err := json.Unmarshal(testdata(t, "session-messages-after-summarize.recorded.json"), &msgs); err != nil {
		t.Fatal(err)
	}
	es := messagesEntries(msgs)
	checkEntries(t, es)
	// Each model request's step-finish part is a usage.reported entry: the
	// answer's, then the compaction summary's.
	want := "user.message,assistant.message,usage.reported,context.compacted,usage.reported"
	if got := strings.Join(kinds(es), ","); got != want {
		t.Fatalf("kinds = %s, want %s", got, want)
	}
	if p := payload(t, es[0]); p["text"] != "hello" {
		t.Errorf("user = %v", p)
	}
	c := payload(t, es[3])
	if c["trigger"] != "manual" || c["preTokens"] != float64(45000) || c["summary"] != "<summary>Mock summary #9</summary>" {
		t.Errorf("compacted = %v", c)
	}
	// The same native ids as the live mapping of the same session.
	live, _ := replay(t, recordedEvents(t, "event-stream-prompt-and-summarize.recorded.sse"), recordedSession)
	ids := map[string]bool{}
	for _, e := range live {
		ids[e.NativeID] = true
	}
	for _, e := range es[1:] {
		if !ids[e.NativeID] {
			t.Errorf("history entry %s has native id %s the live mapping does not use", e.Kind, e.NativeID)
		}
	}
}

func TestMapOrphanTextKeptAtIdle(t *testing.T) {
	m := newEventMapper("ses_a")
	out := m.handle(event{ID: "evt_1", Type: "message.part.updated", Properties: json.RawMessage(
		`{"sessionID":"ses_a","part":{"id":"prt_o","messageID":"msg_unseen","type":"text","text":"orphan","time":{"start":1,"end":2}}}`)})
	if len(out) != 0 {
		t.Fatalf("text of an undescribed message mapped at once: %v", out)
	}
	out = m.handle(event{ID: "evt_2", Type: "session.idle", Properties: json.RawMessage(`{"sessionID":"ses_a"}`)})
	if len(out) != 1 || out[0].Entry.Kind != core.KindHarnessEvent || out[0].Entry.NativeID != "prt_o" {
		t.Fatalf("at idle: %v", out)
	}
}

// TestTodoUpdatedBecomesPlan: OpenCode's todo.updated is a plan.updated
// entry (cancelled todos included, by Bridge's spelling).
func TestTodoUpdatedBecomesPlan(t *testing.T) {
	m := newEventMapper("ses_a")
	var es []core.NewEntry
	for _, ev := range []event{
		{ID: "evt_t1", Type: "todo.updated", Properties: json.RawMessage(`{"sessionID":"ses_a","todos":[{"id":"1","content":"parse","status":"in_progress","priority":"high"}]}`)},
		{ID: "evt_t2", Type: "todo.updated", Properties: json.RawMessage(`{"sessionID":"ses_a","todos":[{"id":"1","content":"parse","status":"completed","priority":"high"},{"id":"2","content":"old","status":"cancelled","priority":"low"}]}`)},
	} {
		for _, o := range m.handle(ev) {
			es = append(es, *o.Entry)
		}
	}
	checkEntries(t, es)
	if len(es) != 2 || es[0].Kind != core.KindPlanUpdated || es[1].Kind != core.KindPlanUpdated {
		t.Fatalf("entries %v", kinds(es))
	}
	var tr core.PlanTracker
	p0, _ := core.ParsePlan(es[0].Payload)
	p1, _ := core.ParsePlan(es[1].Payload)
	if tr.Apply(p0) != 0 || tr.Apply(p1) != 1 || p1.Steps[1].Status != core.PlanCancelled {
		t.Fatalf("plans %+v then %+v: want one step completed by the second", p0, p1)
	}
}
