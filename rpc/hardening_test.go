package rpc

import (
	"context"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// TestNullIDIsInvalidRequest: a request whose id is null is not a
// notification: it is answered with Invalid Request (id null), and the
// method is not run.
func TestNullIDIsInvalidRequest(t *testing.T) {
	f := newFake()
	c := startServer(t, f, nil)
	c.initialize()
	before := len(f.received())
	c.sendRaw(frame([]byte(`{"jsonrpc":"2.0","id":null,"method":"session/list","params":{}}`)))
	e := wantError(t, c.nullReply(0), int(CodeInvalidRequest))
	if !strings.Contains(e.Message, "id") {
		t.Fatalf("message %q should say what is wrong with the id", e.Message)
	}
	c.MustCall("session/list", map[string]any{}, nil)
	if n := len(f.received()) - before; n != 1 {
		t.Fatalf("%d calls reached the backend, want only the valid one", n)
	}
}

// TestHugeFieldGetsAShortError: errors quote at most a short prefix of
// what the client sent, however large.
func TestHugeFieldGetsAShortError(t *testing.T) {
	f := newFake()
	f.history = func(_ context.Context, p schema.SessionHistoryParams) (schema.SessionHistoryResult, error) {
		return schema.SessionHistoryResult{}, core.NotFound("session", p.SessionID)
	}
	c := startServer(t, f, nil)
	c.initialize()
	huge := strings.Repeat("s", 5<<20)
	for _, tc := range []struct {
		method string
		params any
	}{
		{"session/history", map[string]any{"sessionId": huge}},
		{"session/history", map[string]any{"sessionId": "s", "beforeSeq": huge}},
		{"session/history", map[string]any{"sessionId": "s", huge: 1}},
		{"session/list", map[string]any{"cursor": 5, "archived": huge}},
		{"session/create", map[string]any{"harness": huge, "cwd": "/w"}},
		{huge, map[string]any{}},
		{"session/prompt", map[string]any{"sessionId": "s", "content": []any{map[string]any{"type": huge, "text": "a"}}}},
	} {
		m := c.Call(tc.method, tc.params)
		if m.Error == nil {
			continue // accepted (the fake answers); nothing to quote
		}
		if len(m.Error.Message)+len(m.Error.Data) > 1024 {
			t.Errorf("%.40s: error of %d bytes (message %.200q)", tc.method, len(m.Error.Message)+len(m.Error.Data), m.Error.Message)
		}
	}
}
