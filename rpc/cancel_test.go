package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// TestCancelRequest cancels a blocked prompt by numeric and by string id;
// the reply is -32800 and the backend saw its context end.
func TestCancelRequest(t *testing.T) {
	for _, id := range []any{7001, "req-abc"} {
		fake := newFake()
		started := make(chan struct{})
		backendErr := make(chan error, 1)
		fake.prompt = func(ctx context.Context, _ schema.SessionPromptParams) (schema.SessionPromptResult, error) {
			err := blockUntilCancelled(ctx, started)
			backendErr <- ctx.Err()
			return schema.SessionPromptResult{}, err
		}
		c := startServer(t, fake, nil)
		c.initialize()
		c.Send(id, "session/prompt", map[string]any{"sessionId": "s1", "content": []any{map[string]any{"type": "text", "text": "slow"}}})
		<-started
		c.Send(nil, "$/cancelRequest", map[string]any{"id": id})
		e := wantError(t, c.reply(id), int(CodeCancelled))
		if d := errData(t, e); d.Code != core.CodeCancelled {
			t.Errorf("id %v: data %+v", id, d)
		}
		if err := <-backendErr; err == nil {
			t.Errorf("id %v: backend context not cancelled", id)
		}
	}
}

// TestCancelUnknownIDIsHarmless checks a cancel for no request changes
// nothing, and a cancel without params does not break the connection.
func TestCancelUnknownIDIsHarmless(t *testing.T) {
	c := startServer(t, newFake(), nil)
	c.initialize()
	c.Send(nil, "$/cancelRequest", map[string]any{"id": 99999})
	c.Send(nil, "$/cancelRequest", nil)
	c.Send(nil, "$/cancelRequest", map[string]any{"id": map[string]any{}})
	c.MustCall("session/list", map[string]any{}, nil)
}

// TestSlowRequestDoesNotBlockFast runs a fast request while a slow one is
// in flight, on the same connection.
func TestSlowRequestDoesNotBlockFast(t *testing.T) {
	fake := newFake()
	started := make(chan struct{})
	fake.prompt = func(ctx context.Context, _ schema.SessionPromptParams) (schema.SessionPromptResult, error) {
		return schema.SessionPromptResult{}, blockUntilCancelled(ctx, started)
	}
	fake.list = func(context.Context, schema.SessionListParams) (schema.SessionListResult, error) {
		return schema.SessionListResult{Items: []schema.SessionListItem{{SessionID: "s9", Harness: "fake"}}}, nil
	}
	c := startServer(t, fake, nil)
	c.initialize()
	slow := c.NextID()
	c.Send(slow, "session/prompt", map[string]any{"sessionId": "s1", "content": []any{map[string]any{"type": "text", "text": "slow"}}})
	<-started
	var res struct {
		Items []struct {
			SessionID string `json:"sessionId"`
		} `json:"items"`
	}
	c.MustCall("session/list", map[string]any{}, &res)
	if len(res.Items) != 1 || res.Items[0].SessionID != "s9" {
		t.Fatalf("list = %+v", res)
	}
	slowJSON, _ := json.Marshal(slow)
	if i := c.Index(func(m wireMsg) bool { return string(m.ID) == string(slowJSON) }); i >= 0 {
		t.Fatalf("the slow request was answered before it was cancelled")
	}
	c.Send(nil, "$/cancelRequest", map[string]any{"id": slow})
	wantError(t, c.reply(slow), int(CodeCancelled))
}

// TestShutdownWithWorkInFlight closes the backend while a prompt runs; the
// prompt still gets an answer and exit returns 0.
func TestShutdownWithWorkInFlight(t *testing.T) {
	fake := newFake()
	started := make(chan struct{})
	fake.prompt = func(ctx context.Context, _ schema.SessionPromptParams) (schema.SessionPromptResult, error) {
		close(started)
		select {
		case <-ctx.Done():
		case <-fake.closed:
		}
		return schema.SessionPromptResult{}, core.Errorf(core.CodeUnavailable, "the session was closed")
	}
	c := startServer(t, fake, nil)
	c.initialize()
	slow := c.NextID()
	c.Send(slow, "session/prompt", map[string]any{"sessionId": "s1", "content": []any{map[string]any{"type": "text", "text": "x"}}})
	<-started
	c.MustCall("shutdown", nil, nil)
	e := wantError(t, c.reply(slow), int(CodeDomain))
	if d := errData(t, e); d.Code != core.CodeUnavailable {
		t.Errorf("data %+v", d)
	}
	c.Send(nil, "exit", nil)
	if r := c.waitExit(); r.code != 0 {
		t.Errorf("exit code %d", r.code)
	}
}

// TestWorkDoneProgressCancel cancels a running prompt the way VS Code does
// when the user presses cancel on its progress: window/workDoneProgress/cancel
// with the progress token. The reply is -32800 and the progress ends
// "cancelled"; a token of no running work changes nothing.
func TestWorkDoneProgressCancel(t *testing.T) {
	for _, tok := range []any{"tok-1", 31} {
		fake := newFake()
		started := make(chan struct{})
		fake.prompt = func(ctx context.Context, _ schema.SessionPromptParams) (schema.SessionPromptResult, error) {
			return schema.SessionPromptResult{}, blockUntilCancelled(ctx, started)
		}
		c := startServer(t, fake, nil)
		c.initialize()
		c.Send(nil, "window/workDoneProgress/cancel", map[string]any{"token": "nothing-runs"})
		id := c.NextID()
		c.Send(id, "session/prompt", map[string]any{"sessionId": "s1", "workDoneToken": tok,
			"content": []any{map[string]any{"type": "text", "text": "slow"}}})
		<-started
		// The other kind of token with the same text cancels nothing.
		other := any("31")
		if tok == "tok-1" {
			other = 0
		}
		c.Send(nil, "window/workDoneProgress/cancel", map[string]any{"token": other})
		c.MustCall("session/list", map[string]any{}, nil)
		if i := c.Index(func(m wireMsg) bool { return m.Method == "" && string(m.ID) == fmt.Sprint(id) }); i >= 0 {
			t.Fatalf("token %v: the prompt ended before its progress was cancelled", tok)
		}
		c.Send(nil, "window/workDoneProgress/cancel", map[string]any{"token": tok})
		wantError(t, c.reply(id), int(CodeCancelled))
		want, _ := json.Marshal(tok)
		rpctest.Await(c.Client, schema.NoticeProgress, func(p schema.ProgressParams) bool {
			got, _ := json.Marshal(p.Token)
			return string(got) == string(want) && p.Value.Kind == schema.ProgressEnd && p.Value.Message == "cancelled"
		})
	}
}
