package main

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/schema"
)

// TestE2EHostedApprovalRelayed: a client that hosts sessions itself (the
// host-over-RPC adapter) relays its harness's permission request as
// hosted/requestPermission; Bridge records it and asks the same client's
// user with session/requestPermission, and the user's answer is the
// decision the hosted harness gets. Without the user capability, the
// preset's policy rejects.
func TestE2EHostedApprovalRelayed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		declare bool
		want    string // the outcome the hosted harness gets
	}{
		{"user allows", true, "allow_once"},
		{"no capability", false, "reject_once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startBridge(t, t.TempDir())
			var mu sync.Mutex
			var got []map[string]any
			var asked int
			c.SetOnRequest(func(m wireMsg) (any, *wireError) {
				switch m.Method {
				case "host/probe":
					var caps []map[string]any
					for _, n := range []string{"session.create", "session.prompt", "session.cancel", "approval.relay"} {
						caps = append(caps, map[string]any{"name": n, "required": false, "available": true})
					}
					return map[string]any{"harness": "go-host", "version": "1", "capabilities": caps}, nil
				case "host/session.create":
					return map[string]any{"nativeId": "go-1"}, nil
				case "host/session.close", "host/session.cancel":
					return map[string]any{}, nil
				case "host/session.prompt":
					if !strings.Contains(string(m.Params), "deploy it") {
						return map[string]any{"stopReason": "end_turn"}, nil // Bridge's own prompts
					}
					// The hosted harness wants to run a tool: ask Bridge.
					var out struct {
						Outcome map[string]any `json:"outcome"`
					}
					if e := c.call("hosted/requestPermission", map[string]any{"nativeId": "go-1",
						"toolCall": map[string]any{"toolCallId": "t-1", "title": "Bash: make deploy", "kind": "execute",
							"rawInput": map[string]any{"command": "make deploy"}}}, &out); e != nil {
						return nil, &wireError{Code: -32603, Message: "hosted/requestPermission failed: " + e.Message}
					}
					mu.Lock()
					got = append(got, out.Outcome)
					mu.Unlock()
					return map[string]any{"stopReason": "end_turn"}, nil
				case "session/requestPermission":
					mu.Lock()
					asked++
					mu.Unlock()
					var p schema.SessionRequestPermissionParams
					_ = json.Unmarshal(m.Params, &p)
					if p.ToolCall.ToolCallID != "t-1" || p.ToolCall.Kind != "execute" {
						return nil, &wireError{Code: -32602, Message: "unexpected request"}
					}
					return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_once"}}, nil
				}
				return nil, &wireError{Code: -32601, Message: "not supported"}
			})
			caps := map[string]any{}
			if tc.declare {
				caps["session"] = map[string]any{"requestPermission": true}
			}
			c.initializeWith(caps, map[string]any{"hostsSessions": true, "hostHarness": "go-host",
				"hostCapabilities": []string{"session.create", "session.prompt", "session.cancel", "approval.relay"}})
			var s struct {
				SessionID string `json:"sessionId"`
			}
			c.MustCall("session/create", map[string]any{"harness": "go-host", "cwd": t.TempDir()}, &s)
			say(t, c, s.SessionID, "deploy it")
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 || got[0]["outcome"] != "selected" || got[0]["optionId"] != tc.want {
				t.Fatalf("the hosted harness got %v, want %s selected", got, tc.want)
			}
			if wantAsked := map[bool]int{true: 1, false: 0}[tc.declare]; asked != wantAsked {
				t.Errorf("the user was asked %d times, want %d", asked, wantAsked)
			}
			_, res, _ := approvalsOf(t, c, s.SessionID)
			wantBy := map[bool]string{true: "user", false: "policy"}[tc.declare]
			if len(res) != 1 || res[0]["by"] != wantBy || res[0]["optionId"] != tc.want {
				t.Errorf("approval.resolved %v", res)
			}
		})
	}
}
