package main

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// TestE2EHostedApprovalRelayed: a client that hosts sessions itself (the
// host-over-RPC adapter) relays its harness's permission request as
// hosted/requestPermission; Bridge records it and asks the same client's
// user with session/requestPermission, and the user's answer is the
// decision the hosted harness gets. Without the user capability, the
// preset's policy rejects.
func TestE2EHostedApprovalRelayed(t *testing.T) {
	t.Parallel()
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
			var got []schema.PermissionOutcome
			var asked int
			c.SetOnRequest(func(m wireMsg) (any, *wireError) {
				switch m.Method {
				case "host/probe":
					var caps []schema.Capability
					for _, n := range []string{"session.create", "session.prompt", "session.cancel", "approval.relay"} {
						caps = append(caps, schema.Capability{Name: n, Available: true})
					}
					return schema.HostProbeResult{Harness: "go-host", Version: "1", Capabilities: caps}, nil
				case "host/session.create":
					return schema.HostSessionCreateResult{NativeID: "go-1"}, nil
				case "host/session.close", "host/session.cancel":
					return schema.HostAck{}, nil
				case "host/session.prompt":
					if !strings.Contains(string(m.Params), "deploy it") {
						return schema.HostSessionPromptResult{StopReason: "end_turn"}, nil // Bridge's own prompts
					}
					// The hosted harness wants to run a tool: ask Bridge.
					out, err := c.HostedRequestPermission(t.Context(), schema.HostedRequestPermissionParams{NativeID: "go-1",
						ToolCall: schema.PermissionToolCall{ToolCallID: "t-1", Title: "Bash: make deploy", Kind: "execute",
							RawInput: json.RawMessage(`{"command":"make deploy"}`)}})
					if err != nil {
						return nil, &wireError{Code: -32603, Message: "hosted/requestPermission failed: " + err.Error()}
					}
					mu.Lock()
					got = append(got, out.Outcome)
					mu.Unlock()
					return schema.HostSessionPromptResult{StopReason: "end_turn"}, nil
				case "session/requestPermission":
					mu.Lock()
					asked++
					mu.Unlock()
					p, _ := rpctest.ParamsAs[schema.SessionRequestPermissionParams](m)
					if p.ToolCall.ToolCallID != "t-1" || p.ToolCall.Kind != "execute" {
						return nil, &wireError{Code: -32602, Message: "unexpected request"}
					}
					return schema.SessionRequestPermissionResult{Outcome: schema.PermissionOutcome{Outcome: schema.OutcomeSelected, OptionID: "allow_once"}}, nil
				}
				return nil, &wireError{Code: -32601, Message: "not supported"}
			})
			var caps schema.ClientCapabilities
			if tc.declare {
				caps.Session = &schema.SessionClientCapabilities{RequestPermission: true}
			}
			c.initializeWith(caps, &schema.InitializationOptions{HostsSessions: true, HostHarness: "go-host",
				HostCapabilities: []string{"session.create", "session.prompt", "session.cancel", "approval.relay"}})
			s, err := c.SessionCreate(t.Context(), schema.SessionCreateParams{Harness: "go-host", Cwd: t.TempDir()})
			must(t, "session/create", err)
			say(t, c, s.SessionID, "deploy it")
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 || got[0].Outcome != schema.OutcomeSelected || got[0].OptionID != tc.want {
				t.Fatalf("the hosted harness got %v, want %s selected", got, tc.want)
			}
			if wantAsked := map[bool]int{true: 1, false: 0}[tc.declare]; asked != wantAsked {
				t.Errorf("the user was asked %d times, want %d", asked, wantAsked)
			}
			_, res, _ := approvalsOf(t, c, s.SessionID)
			wantBy := map[bool]schema.DecidedBy{true: "user", false: "policy"}[tc.declare]
			if len(res) != 1 || res[0].By != wantBy || res[0].OptionID != tc.want {
				t.Errorf("approval.resolved %v", res)
			}
		})
	}
}
