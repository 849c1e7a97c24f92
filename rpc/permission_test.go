package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
)

func permissionRequest() peer.PermissionRequest {
	return peer.PermissionRequest{SessionID: "s_1", Request: core.ApprovalRequest{ID: "a1", ToolCallID: "toolu_1",
		Title: "Bash: make", Kind: "execute", RawInput: json.RawMessage(`{"command":"make"}`), Options: core.DefaultApprovalOptions()}}
}

// TestPermissionAskerRoundTrip: the client declares the capability, gets
// session/requestPermission in ACP's shape, and its answers decode.
func TestPermissionAskerRoundTrip(t *testing.T) {
	fake := newFake()
	opts := make(chan InitOptions, 1)
	cs := make(chan Caller, 1)
	c := startServer(t, fake, func(cfg *Config) {
		cfg.Open = func(ctx context.Context, o InitOptions, n peer.Notifier, cl Caller) (Backend, error) {
			opts <- o
			cs <- cl
			return fake, nil
		}
	})
	answers := []any{
		map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_once"}},
		map[string]any{"outcome": map[string]any{"outcome": "cancelled"}},
		map[string]any{"outcome": map[string]any{"outcome": "maybe"}},
	}
	var got []wireMsg
	c.SetOnRequest(func(m wireMsg) (any, *wireErr) {
		got = append(got, m)
		a := answers[0]
		answers = answers[1:]
		return a, nil
	})
	c.MustCall("initialize", map[string]any{"processId": 1, "capabilities": map[string]any{"session": map[string]any{"requestPermission": true}}}, nil)
	if o := <-opts; !o.RequestPermission {
		t.Fatalf("capabilities.session.requestPermission was not read: %+v", o)
	}
	a := PermissionAsker(<-cs)
	id, err := a.RequestPermission(context.Background(), permissionRequest())
	if err != nil || id != "allow_once" {
		t.Fatalf("selected: %q %v", id, err)
	}
	var p struct {
		SessionID string `json:"sessionId"`
		ToolCall  struct {
			ToolCallID string          `json:"toolCallId"`
			Title      string          `json:"title"`
			Kind       string          `json:"kind"`
			RawInput   json.RawMessage `json:"rawInput"`
		} `json:"toolCall"`
		Options []struct {
			OptionID string `json:"optionId"`
			Name     string `json:"name"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	if err := json.Unmarshal(got[0].Params, &p); err != nil {
		t.Fatal(err)
	}
	if got[0].Method != "session/requestPermission" || p.SessionID != "s_1" || p.ToolCall.ToolCallID != "toolu_1" ||
		p.ToolCall.Kind != "execute" || string(p.ToolCall.RawInput) != `{"command":"make"}` || len(p.Options) != 4 ||
		p.Options[1].Kind != "allow_always" {
		t.Errorf("request %s %s", got[0].Method, got[0].Params)
	}
	if id, err := a.RequestPermission(context.Background(), permissionRequest()); err != nil || id != "" {
		t.Errorf("cancelled: %q %v", id, err)
	}
	if _, err := a.RequestPermission(context.Background(), permissionRequest()); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("unknown outcome: %v", err)
	}
}

// TestPermissionAskerCancelSendsCancelRequest: when the wait is abandoned
// (the turn was cancelled), the client gets $/cancelRequest for it.
func TestPermissionAskerCancelSendsCancelRequest(t *testing.T) {
	fake := newFake()
	c, _, cs := notifyingServer(t, fake)
	c.SetOnRequest(func(m wireMsg) (any, *wireErr) { return nil, nil }) // never answers
	c.initialize()
	a := PermissionAsker(<-cs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.RequestPermission(ctx, permissionRequest())
		done <- err
	}()
	req := c.Await("session/requestPermission", func(m wireMsg) bool { return m.Method == "session/requestPermission" })
	cancel()
	if err := <-done; !errors.Is(err, core.ErrCancelled) {
		t.Errorf("abandoned request: %v", err)
	}
	c.AwaitNotification("$/cancelRequest", func(p json.RawMessage) bool { return string(p) == `{"id":`+string(req.ID)+`}` })
}
