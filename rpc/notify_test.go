package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// notifyingServer starts a server whose Open hands the Notifier and Caller
// to the test.
func notifyingServer(t *testing.T, fake *fakeBackend) (*client, chan peer.Notifier, chan Caller) {
	t.Helper()
	ns := make(chan peer.Notifier, 1)
	cs := make(chan Caller, 1)
	c := startServer(t, fake, func(cfg *Config) {
		cfg.Open = func(ctx context.Context, opts InitOptions, n peer.Notifier, cl Caller) (Backend, error) {
			ns <- n
			cs <- cl
			return fake, nil
		}
	})
	return c, ns, cs
}

// TestPromptStreamsUpdates checks session/update notifications arrive
// before the prompt's result, with the entry's wire shape.
func TestPromptStreamsUpdates(t *testing.T) {
	fake := newFake()
	c, ns, _ := notifyingServer(t, fake)
	c.initialize()
	n := <-ns
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fake.prompt = func(ctx context.Context, p schema.SessionPromptParams) (schema.SessionPromptResult, error) {
		id, content := p.SessionID, p.Content
		n.EntryAppended(core.Entry{ID: "e1", SessionID: id, Seq: 1, Kind: core.KindUserMessage,
			Payload: core.Payload(map[string]string{"text": content[0].Text}), CreatedAt: at})
		n.EntryAppended(core.Entry{ID: "e2", SessionID: id, ParentID: "e1", Seq: 2, Kind: core.KindAssistantMessage,
			Payload: core.Payload(map[string]string{"text": "hi"}), CreatedAt: at})
		return schema.SessionPromptResult{StopReason: "end_turn"}, nil
	}
	res := rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: "s1", Content: []schema.Content{{Type: "text", Text: "hello"}}})
	if res.StopReason != "end_turn" {
		t.Errorf("stopReason %q", res.StopReason)
	}
	got := rpctest.Notes(c.Client, schema.NoticeSessionUpdate)
	if len(got) != 2 || got[0].Entry.ID != "e1" || got[1].Entry.ParentID != "e1" || got[0].SessionID != "s1" ||
		string(got[0].Entry.Payload) != `{"text":"hello"}` || !got[1].Entry.CreatedAt.Equal(at) || got[1].Entry.Kind != "assistant.message" {
		t.Errorf("updates before the result: %+v", got)
	}
}

// TestNotifications checks each Notifier method's wire shape.
func TestNotifications(t *testing.T) {
	fake := newFake()
	c, ns, _ := notifyingServer(t, fake)
	c.initialize()
	n := <-ns
	pre, post := int64(150000), int64(30000)
	n.ContextCompacted(peer.ContextCompacted{SessionID: "s1", EntryID: "e5", Harness: "claude-code", Trigger: "auto", PreTokens: &pre, PostTokens: &post})
	n.CheckpointSaved(peer.CheckpointSaved{SessionID: "s1", EntryID: "e6", Reason: "manual", Provenance: "agent", Method: "fork", Hot: true})
	n.Restored(peer.Restored{SessionID: "s1", Mode: core.ModeCheckpointRestored, Reason: "native resume failed", NativeError: "no thread", CheckpointEntryID: "e6"})
	n.Log(2, "codex is older than 0.169")
	cases := []struct{ method, want string }{
		{"session/contextCompacted", `{"sessionId":"s1","entryId":"e5","harness":"claude-code","trigger":"auto","preTokens":150000,"postTokens":30000}`},
		{"session/checkpointSaved", `{"sessionId":"s1","entryId":"e6","reason":"manual","provenance":"agent","method":"fork","hot":true}`},
		{"session/restored", `{"sessionId":"s1","mode":"checkpoint_restored","reason":"native resume failed","nativeError":"no thread","checkpointEntryId":"e6"}`},
		{"window/logMessage", `{"type":2,"message":"codex is older than 0.169"}`},
	}
	for _, tc := range cases {
		m := c.AwaitNotification(tc.method, nil)
		if string(m.Params) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.method, m.Params, tc.want)
		}
	}
}

// TestWorkDoneProgress checks begin/report/end for a workDoneToken, all
// before the result, and no progress without a token.
func TestWorkDoneProgress(t *testing.T) {
	fake := newFake()
	fake.checkpoint = func(ctx context.Context, p schema.SessionCheckpointParams) (schema.SessionCheckpointResult, error) {
		return schema.SessionCheckpointResult{}, errors.New("unused")
	}
	c := startServer(t, fake, nil)
	c.initialize()
	fake.prompt = func(ctx context.Context, _ schema.SessionPromptParams) (schema.SessionPromptResult, error) {
		// The reporter is reachable the way the service reaches it.
		p := peer.ProgressFrom(ctx)
		p(1, 4, "thinking")
		p(3, 4, "writing")
		return schema.SessionPromptResult{StopReason: "end_turn"}, nil
	}
	text := []schema.Content{{Type: "text", Text: "x"}}
	for _, token := range []schema.ProgressToken{schema.StringToken("tok-1"), schema.NumberToken(17)} {
		rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: "s1", Content: text,
			WorkDoneProgressParams: schema.WorkDoneProgressParams{WorkDoneToken: &token}})
		var kinds []string
		for _, p := range rpctest.Notes(c.Client, schema.NoticeProgress) {
			if p.Token != token {
				continue
			}
			s := p.Value.Kind + ":" + p.Value.Title + p.Value.Message
			if p.Value.Percentage != nil {
				s += ":" + strings.Repeat("|", *p.Value.Percentage/25)
			}
			kinds = append(kinds, s)
		}
		want := []string{"begin:Prompt", "report:thinking:|", "report:writing:|||", "end:done"}
		if strings.Join(kinds, ",") != strings.Join(want, ",") {
			t.Errorf("token %v: progress %v, want %v", token, kinds, want)
		}
	}
	// Without a token: no $/progress at all.
	before := c.count("$/progress")
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: "s1", Content: text})
	if after := c.count("$/progress"); after != before {
		t.Errorf("progress sent without a token: %d -> %d", before, after)
	}
	// A failing operation ends its progress with "failed".
	failing := schema.StringToken("tok-f")
	id := c.NextID()
	c.Send(id, "session/checkpoint", schema.SessionCheckpointParams{SessionID: "s1",
		WorkDoneProgressParams: schema.WorkDoneProgressParams{WorkDoneToken: &failing}})
	wantError(t, c.reply(id), int(CodeInternal))
	rpctest.Await(c.Client, schema.NoticeProgress, func(p schema.ProgressParams) bool {
		return p.Token == failing && p.Value.Kind == schema.ProgressEnd && p.Value.Message == "failed"
	})
}

// count returns how many messages have method.
func (c *client) count(method string) int {
	n := 0
	for _, m := range c.Messages() {
		if m.Method == method {
			n++
		}
	}
	return n
}

// TestCallerRoundTripAndCancel calls the client back; a cancelled call
// sends $/cancelRequest with the call's id.
func TestCallerRoundTripAndCancel(t *testing.T) {
	fake := newFake()
	c, _, cs := notifyingServer(t, fake)
	c.SetOnRequest(func(m wireMsg) (any, *wireErr) {
		switch m.Method {
		case "host/probe":
			return map[string]any{"harness": "vsc-host", "capabilities": []any{}}, nil
		case "host/session.cancel":
			return nil, &wireErr{Code: -32001, Message: "no live session"}
		}
		return nil, nil // host/session.prompt: never answered
	})
	c.initialize()
	cl := <-cs
	var probe struct {
		Harness string `json:"harness"`
	}
	if err := cl.Call(context.Background(), "host/probe", map[string]any{}, &probe); err != nil || probe.Harness != "vsc-host" {
		t.Fatalf("host/probe: %+v %v", probe, err)
	}
	err := cl.Call(context.Background(), "host/session.cancel", map[string]any{"sessionId": "n1"}, nil)
	if core.ErrorCode(err) != core.CodeHarness || !strings.Contains(err.Error(), "no live session") {
		t.Errorf("error reply: %v (%s)", err, core.ErrorCode(err))
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cl.Call(ctx, "host/session.prompt", map[string]any{"sessionId": "n1"}, nil) }()
	req := c.Await("host/session.prompt", func(m wireMsg) bool { return m.Method == "host/session.prompt" })
	cancel()
	err = <-done
	if core.ErrorCode(err) != core.CodeCancelled || !errors.Is(err, core.ErrCancelled) {
		t.Errorf("cancelled call: %v", err)
	}
	c.AwaitNotification("$/cancelRequest", func(p json.RawMessage) bool {
		return string(p) == `{"id":`+string(req.ID)+`}`
	})
}

// hostEventBackend receives host/event notifications.
type hostEventBackend struct {
	*fakeBackend
	events chan string
}

func (h hostEventBackend) HostEvent(_ context.Context, params json.RawMessage) {
	h.events <- string(params)
}

func TestHostEventReachesBackend(t *testing.T) {
	b := hostEventBackend{fakeBackend: newFake(), events: make(chan string, 4)}
	c := startServer(t, nil, func(cfg *Config) {
		cfg.Open = func(context.Context, InitOptions, peer.Notifier, Caller) (Backend, error) { return b, nil }
	})
	c.Send(nil, "host/event", map[string]any{"n": 0}) // before initialize: dropped
	c.initialize()
	c.Send(nil, "host/event", map[string]any{"n": 1})
	if got := <-b.events; got != `{"n":1}` {
		t.Errorf("event %s", got)
	}
}

// callingOnClose is a backend whose Close calls the client, as the
// before_shutdown checkpoint of a session the client hosts does.
type callingOnClose struct {
	*fakeBackend
	cl  chan Caller
	got chan error
}

func (b callingOnClose) Close(ctx context.Context) error {
	b.got <- (<-b.cl).Call(ctx, "host/session.prompt", map[string]any{"sessionId": "n1"}, nil)
	return b.fakeBackend.Close(ctx)
}

// TestCallFailsOnceTheClientInputEnds: a call to the client that waits for
// a reply when the client closes its input, or is made after that (by the
// backend's Close), fails with CodeUnavailable instead of waiting for its
// context. The shutdown checkpoint of a session the client hosts runs under
// a context only its bound ends; before, Bridge waited out that bound (and
// an editor that closed the pipe killed it after 10 s).
func TestCallFailsOnceTheClientInputEnds(t *testing.T) {
	b := callingOnClose{fakeBackend: newFake(), cl: make(chan Caller, 1), got: make(chan error, 1)}
	var cl Caller
	c := startServer(t, b.fakeBackend, func(cfg *Config) {
		cfg.Open = func(ctx context.Context, opts InitOptions, n peer.Notifier, caller Caller) (Backend, error) {
			cl = caller
			b.cl <- caller
			return b, nil
		}
	})
	c.SetOnRequest(func(m wireMsg) (any, *wireErr) {
		select {} // host/session.prompt: never answered
	})
	c.initialize()
	waiting := make(chan error, 1)
	go func() {
		waiting <- cl.Call(context.Background(), "host/session.prompt", map[string]any{"sessionId": "n1"}, nil)
	}()
	c.Await("host/session.prompt", func(m wireMsg) bool { return m.Method == "host/session.prompt" })
	c.w.Close()
	for _, call := range []struct {
		name string
		err  <-chan error
	}{{"waiting when the input ended", waiting}, {"made by Close after the input ended", b.got}} {
		select {
		case err := <-call.err:
			if core.ErrorCode(err) != core.CodeUnavailable || !strings.Contains(err.Error(), "closed its input") {
				t.Errorf("%s: %v (%s), want unavailable: the client closed its input", call.name, err, core.ErrorCode(err))
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: still waiting 30 s after the client's input ended", call.name)
		}
	}
	if res := c.waitExit(); res.code != 1 || res.err != nil {
		t.Errorf("Serve returned %d, %v; want 1 (input ended without shutdown)", res.code, res.err)
	}
}
