package codex

import (
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/core"
)

// Recorded from codex-cli 0.169.0 (the pinned program) against fakemodel: a
// turn running `echo` through exec_command, then a turn adding a file with
// apply_patch.
func TestReplayToolsRecording(t *testing.T) {
	ctx := ctxT(t)
	h := fakeHost(t, "replay:"+testdata(t, "app-server-tools.recorded.jsonl")+":0")
	var c adaptertest.Events
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: "/home/user/project"}, c.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLive(t, l)
	for _, msg := range []string{"run echo", "add a file"} {
		if res, err := l.Prompt(ctx, text(msg)); err != nil || res.StopReason != "end_turn" {
			t.Fatalf("Prompt(%s) = %+v, %v", msg, res, err)
		}
	}
	var kinds []string
	for _, e := range c.Entries() {
		if e.Kind != core.KindHarnessEvent {
			kinds = append(kinds, string(e.Kind))
		}
	}
	want := "tool.started tool.completed assistant.message usage.reported " +
		"tool.started tool.completed artifact.created assistant.message usage.reported"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("kinds = %s\nwant    %s", got, want)
	}
	done := c.OfKind(core.KindToolCompleted)
	if len(done) != 2 {
		t.Fatalf("tool.completed = %v", done)
	}
	echo := payloadOf(t, done[0])
	if echo["toolId"] != "call_echo_1" || echo["exitCode"] != float64(0) || !strings.Contains(echo["output"].(string), "hello-from-tool") ||
		echo["name"] != "commandExecution" || done[0].NativeID != "call_echo_1:completed" {
		t.Errorf("echo = %v", echo)
	}
	started := payloadOf(t, c.OfKind(core.KindToolStarted)[0])
	if !strings.Contains(started["command"].(string), "echo hello-from-tool") {
		t.Errorf("tool.started = %v", started)
	}
	arts := c.OfKind(core.KindArtifactCreated)
	if len(arts) != 1 || payloadOf(t, arts[0])["path"] != "/home/user/project/notes/hello.txt" || payloadOf(t, arts[0])["change"] != "add" {
		t.Errorf("artifacts = %v", arts)
	}
	checkEntries(t, c.Entries())
}

func feed(m *mapper, lines ...string) []core.Event {
	var evs []core.Event
	for _, l := range lines {
		var msg message
		if err := jsonUnmarshal(l, &msg); err != nil {
			panic(err)
		}
		evs = append(evs, m.notification(msg.Method, msg.Params, []byte(l)).Events...)
	}
	return evs
}

func entriesOf(evs []core.Event, k core.Kind) []core.NewEntry {
	var out []core.NewEntry
	for _, e := range evs {
		if e.Entry != nil && e.Entry.Kind == k {
			out = append(out, *e.Entry)
		}
	}
	return out
}

const (
	itemStartedCC   = `{"method":"item/started","params":{"item":{"type":"contextCompaction","id":"cc-1"},"threadId":"th","turnId":"turn-9"}}`
	itemCompletedCC = `{"method":"item/completed","params":{"item":{"type":"contextCompaction","id":"cc-1"},"threadId":"th","turnId":"turn-9"}}`
	deprecatedCC    = `{"method":"thread/compacted","params":{"threadId":"th","turnId":"turn-9"}}`
	usage           = `{"method":"thread/tokenUsage/updated","params":{"threadId":"th","turnId":"turn-9","tokenUsage":{"total":{"totalTokens":9},"last":{"totalTokens":%s},"modelContextWindow":1000}}}`
)

func TestCompactionReportedOnceWithDeprecatedNotification(t *testing.T) {
	// Item first, deprecated notification after: one entry, the item's id.
	m := newMapper()
	evs := feed(m, strings.Replace(usage, "%s", "800", 1), itemStartedCC, strings.Replace(usage, "%s", "300", 1), itemCompletedCC, deprecatedCC)
	comps := entriesOf(evs, core.KindContextCompacted)
	if len(comps) != 1 || comps[0].NativeID != "cc-1" {
		t.Fatalf("compactions = %v", comps)
	}
	cp := compactedOf(t, comps[0])
	if cp.Trigger != core.TriggerAuto || *cp.PreTokens != 800 || *cp.PostTokens != 300 || !cp.Estimated {
		t.Errorf("compacted = %s", comps[0].Payload)
	}
	// Deprecated notification first: one entry, and the later item adds none.
	m = newMapper()
	m.expectManual()
	evs = feed(m, `{"method":"turn/started","params":{"threadId":"th","turn":{"id":"turn-9"}}}`, deprecatedCC, itemStartedCC, itemCompletedCC)
	comps = entriesOf(evs, core.KindContextCompacted)
	if len(comps) != 1 || !strings.HasPrefix(comps[0].NativeID, "codex:thread/compacted:") {
		t.Fatalf("compactions = %v", comps)
	}
	if cp := compactedOf(t, comps[0]); cp.Trigger != core.TriggerManual || cp.PreTokens != nil {
		t.Errorf("compacted = %s", comps[0].Payload)
	}
}

func TestErrorNotificationBecomesStatus(t *testing.T) {
	m := newMapper()
	evs := feed(m,
		`{"method":"error","params":{"error":{"message":"stream disconnected","codexErrorInfo":{"httpConnectionFailed":{"httpStatusCode":502}}},"willRetry":true,"threadId":"th","turnId":"t1"}}`,
		`{"method":"error","params":{"error":{"message":"context window exceeded","codexErrorInfo":"contextWindowExceeded"},"willRetry":false,"threadId":"th","turnId":"t1"}}`,
		`{"method":"error","params":"not an object"}`)
	st := entriesOf(evs, core.KindSessionStatus)
	if len(st) != 2 {
		t.Fatalf("statuses = %v", st)
	}
	p0, p1 := payloadOf(t, st[0]), payloadOf(t, st[1])
	if p0["status"] != "retrying" || p0["message"] != "stream disconnected" || p1["status"] != "error" || p1["codexErrorInfo"] != "contextWindowExceeded" {
		t.Errorf("payloads = %v / %v", p0, p1)
	}
	if len(entriesOf(evs, core.KindHarnessEvent)) != 1 {
		t.Error("malformed error notification not kept")
	}
	checkEntries(t, append(st, entriesOf(evs, core.KindHarnessEvent)...))
}

func TestDeclinedFileChangeCreatesNoArtifact(t *testing.T) {
	m := newMapper()
	evs := feed(m, `{"method":"item/completed","params":{"item":{"type":"fileChange","id":"call_x","status":"declined","changes":[{"path":"/p/a.go","kind":{"type":"update","move_path":null},"diff":""}]},"threadId":"th","turnId":"t"}}`)
	if a := entriesOf(evs, core.KindArtifactCreated); len(a) != 0 {
		t.Errorf("artifacts = %v", a)
	}
	if len(entriesOf(evs, core.KindToolStarted)) != 1 || len(entriesOf(evs, core.KindToolCompleted)) != 1 {
		t.Errorf("tool entries missing: %v", evs)
	}
}

func TestForeignUserMessageIsRecorded(t *testing.T) {
	m := newMapper()
	m.expectPrompt("mine")
	evs := feed(m,
		`{"method":"item/completed","params":{"item":{"type":"userMessage","id":"u1","content":[{"type":"text","text":"mine"}]},"threadId":"th","turnId":"t1"}}`,
		`{"method":"item/completed","params":{"item":{"type":"userMessage","id":"u2","content":[{"type":"text","text":"from another client"},{"type":"image","url":"data:x"}]},"threadId":"th","turnId":"t2"}}`)
	users := entriesOf(evs, core.KindUserMessage)
	if len(users) != 1 || users[0].NativeID != "u2" || payloadOf(t, users[0])["images"] != float64(1) {
		t.Errorf("user messages = %v", users)
	}
}

// TestPlanUpdatedBecomesPlanEntry: turn/plan/updated is a plan.updated entry
// with Bridge's step statuses.
func TestPlanUpdatedBecomesPlanEntry(t *testing.T) {
	m := newMapper()
	evs := feed(m, `{"method":"turn/plan/updated","params":{"threadId":"th","turnId":"t1","explanation":null,"plan":[{"step":"write the parser","status":"completed"},{"step":"add tests","status":"inProgress"},{"step":"ship","status":"pending"}]}}`)
	ps := entriesOf(evs, core.KindPlanUpdated)
	if len(ps) != 1 {
		t.Fatalf("plan.updated entries: %v", evs)
	}
	p, ok := core.ParsePlan(ps[0].Payload)
	if !ok || len(p.Steps) != 3 || p.Steps[0].Status != "completed" || p.Steps[1].Status != "in_progress" || p.Steps[2].Text != "ship" || p.Partial {
		t.Fatalf("plan %+v", p)
	}
	var tr core.PlanTracker
	if n := tr.Apply(p); n != 1 {
		t.Errorf("completed steps %d, want 1", n)
	}
	checkEntries(t, ps)
}

// TestManualMarkerIsClaimedByTheCompactionItem: a turn that starts after
// thread/compact/start was sent but carries no compaction (a goal turn the
// compaction interrupts) does not take the manual marker; the turn with the
// contextCompaction item does.
func TestManualMarkerIsClaimedByTheCompactionItem(t *testing.T) {
	m := newMapper()
	m.expectManual()
	var manual []string
	for _, l := range []string{
		`{"method":"turn/started","params":{"threadId":"th","turn":{"id":"turn-goal"}}}`,
		`{"method":"turn/completed","params":{"threadId":"th","turn":{"id":"turn-goal","status":"interrupted"}}}`,
		`{"method":"turn/started","params":{"threadId":"th","turn":{"id":"turn-c"}}}`,
		`{"method":"item/started","params":{"item":{"type":"contextCompaction","id":"cc-9"},"threadId":"th","turnId":"turn-c"}}`,
		`{"method":"item/completed","params":{"item":{"type":"contextCompaction","id":"cc-9"},"threadId":"th","turnId":"turn-c"}}`,
		`{"method":"item/started","params":{"item":{"type":"contextCompaction","id":"cc-10"},"threadId":"th","turnId":"turn-later"}}`,
		`{"method":"item/completed","params":{"item":{"type":"contextCompaction","id":"cc-10"},"threadId":"th","turnId":"turn-later"}}`,
	} {
		var msg message
		if err := jsonUnmarshal(l, &msg); err != nil {
			t.Fatal(err)
		}
		out := m.notification(msg.Method, msg.Params, []byte(l))
		if out.ManualTurn != "" {
			manual = append(manual, out.ManualTurn)
		}
		for _, e := range out.Events {
			if e.Entry == nil || e.Entry.Kind != core.KindContextCompacted {
				continue
			}
			want := core.TriggerManual
			if e.Entry.NativeID == "cc-10" {
				want = core.TriggerAuto
			}
			if cp := compactedOf(t, *e.Entry); cp.Trigger != want {
				t.Errorf("%s: trigger %q, want %q", e.Entry.NativeID, cp.Trigger, want)
			}
		}
	}
	if len(manual) != 1 || manual[0] != "turn-c" {
		t.Errorf("manual turns = %v, want [turn-c]", manual)
	}
}
