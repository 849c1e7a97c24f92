package main

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// TestQueueAndSteerRealHarnesses drives real Claude Code and real Codex
// through the bridge binary against the fake model: a prompt sent while a
// turn runs waits in the queue (session/queue lists it, $/progress says it
// waits) and runs after the turn; a prompt sent with steer reaches the
// running turn (the fake model's next request of that turn carries it).
func TestQueueAndSteerRealHarnesses(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{})
	c := h.start(t)
	for _, harness := range []string{"claude-code", "codex"} {
		t.Run(harness, func(t *testing.T) { queueAndSteer(t, h, c, harness) })
	}
	c.exit(true)
}

func queueAndSteer(t *testing.T, h *harnessEnv, c *client, harness string) {
	sid := h.create(t, c, harness, "queue "+harness)
	first := harness + " first task"
	second := harness + " second task"
	steer := harness + " steer: also mention bananas"
	gate := make(chan struct{})
	var once sync.Once
	// The first request of the first turn waits for the gate, then calls a
	// tool that does not exist: the harness answers with an error result
	// and asks the model again, within the same turn.
	h.on(first, func(fakemodel.Request) fakemodel.Reply {
		held := false
		once.Do(func() { held = true })
		if !held {
			return fakemodel.Reply{Text: "first done"}
		}
		<-gate
		return fakemodel.Reply{ToolCall: &fakemodel.ToolCall{Name: "no_such_tool_" + strings.ReplaceAll(harness, "-", "_"), Input: json.RawMessage(`{}`)}}
	})
	h.onText(second, "second done")
	from := len(h.fake.Requests())

	firstID := c.Request("session/prompt", schema.SessionPromptParams{SessionID: sid, Content: prompt(first)})
	awaitRequest(t, h, from, first)

	token := schema.StringToken("queue-" + harness)
	secondID := c.Request("session/prompt", schema.SessionPromptParams{SessionID: sid, Content: prompt(second), PromptID: "p2-" + harness,
		WorkDoneProgressParams: schema.WorkDoneProgressParams{WorkDoneToken: &token}})
	awaitQueued(t, c, sid, "p2-"+harness)
	rpctest.Await(c.Client, schema.NoticeProgress, func(p schema.ProgressParams) bool {
		return p.Token == token && strings.Contains(string(mustJSON(p.Value)), "queued")
	})

	st := rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt(steer), Steer: true})
	if st.StopReason != "steered" {
		t.Fatalf("steered prompt: stopReason %q, want steered", st.StopReason)
	}
	close(gate)

	var r1, r2 struct {
		StopReason string `json:"stopReason"`
		Queued     bool   `json:"queued"`
		PromptID   string `json:"promptId"`
	}
	m1 := c.Reply(firstID)
	if m1.Error != nil || json.Unmarshal(m1.Result, &r1) != nil || r1.StopReason != "end_turn" || r1.Queued {
		t.Fatalf("first prompt: %s %+v", m1.Result, m1.Error)
	}
	m2 := c.Reply(secondID)
	if m2.Error != nil || json.Unmarshal(m2.Result, &r2) != nil || r2.StopReason != "end_turn" || !r2.Queued || r2.PromptID != "p2-"+harness {
		t.Fatalf("queued prompt: %s %+v", m2.Result, m2.Error)
	}

	// The model saw the steered text in the first turn, before the queued
	// prompt's turn began.
	reqs := h.requestsSince(from)
	steeredAt, secondAt := -1, -1
	for i, r := range reqs {
		text := requestText(r)
		if steeredAt < 0 && strings.Contains(text, "also mention bananas") {
			steeredAt = i
			if !strings.Contains(text, first) {
				t.Errorf("the request carrying the steered text is not the first turn's conversation: %.300s", text)
			}
		}
		if secondAt < 0 && strings.Contains(r.LastUserText, second) {
			secondAt = i
		}
	}
	if steeredAt < 0 || secondAt < 0 || steeredAt > secondAt {
		for i, r := range reqs {
			t.Logf("request %d: last user text %.200q", i, r.LastUserText)
		}
		t.Fatalf("steered text first seen in request %d, queued prompt in %d: want the steer inside the first turn", steeredAt, secondAt)
	}

	// The record: the three prompts, in the order they reached the harness.
	var users []string
	lastReply := ""
	for _, e := range history(t, c, sid) {
		if e.Kind == "assistant.message" {
			lastReply, _ = payloadOf(t, e)["text"].(string)
		}
		if e.Kind == "user.message" {
			p := payloadOf(t, e)
			s, _ := p["text"].(string)
			if p["steered"] == true {
				s += " (steered)"
			}
			users = append(users, s)
		}
	}
	want := []string{first, steer + " (steered)", second}
	if strings.Join(users, "|") != strings.Join(want, "|") {
		t.Fatalf("user messages %q, want %q", users, want)
	}
	if lastReply != "second done" {
		t.Fatalf("the record ends with the reply %q, want the queued prompt's own (second done)", lastReply)
	}
}

// awaitRequest waits until the fake model received a request whose last
// user text holds text, from request index from on.
func awaitRequest(t *testing.T, h *harnessEnv, from int, text string) {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range h.requestsSince(from) {
			if strings.Contains(r.LastUserText, text) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the fake model never received %q", text)
}

// awaitQueued waits until session/queue lists promptID.
func awaitQueued(t *testing.T, c *client, sid, promptID string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		q := rpctest.Must(c.Client, c.SessionQueue, schema.SessionQueueParams{SessionID: sid})
		for _, it := range q.Items {
			if it.PromptID == promptID {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("session/queue never listed %s", promptID)
}
