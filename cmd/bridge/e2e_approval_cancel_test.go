package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2EApprovalCancelledTurn: with real Claude Code, the client is asked
// and does not answer; session/cancel makes Bridge withdraw the request
// ($/cancelRequest with its id), the preset's policy refuses the tool, the
// tool never runs, and the turn ends.
func TestE2EApprovalCancelledTurn(t *testing.T) {
	h := newHarnessEnv(t, harnessOptions{})
	toolOnce(h, "create cancelled.txt", approvalCases[0].call(h, "cancelled.txt"))
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c := startBridge(t, h.dataDir)
	c.SetOnRequest(func(m wireMsg) (any, *wireError) {
		<-release // a user who never answers
		return nil, &wireError{Code: -32800, Message: "too late"}
	})
	c.initializeWith(map[string]any{"session": map[string]any{"requestPermission": true}}, nil)
	sid := h.create(t, c, "claude-code", "cancel")
	id := c.Request("session/prompt", map[string]any{"sessionId": sid, "content": prompt("create cancelled.txt")})
	ask := c.awaitNote("session/requestPermission", func(m wireMsg) bool { return m.Method == "session/requestPermission" })
	c.MustCall("session/cancel", map[string]any{"sessionId": sid}, nil)
	c.awaitNote("$/cancelRequest for the permission request", func(m wireMsg) bool {
		var p struct {
			ID json.RawMessage `json:"id"`
		}
		return m.Method == "$/cancelRequest" && json.Unmarshal(m.Params, &p) == nil && string(p.ID) == string(ask.ID)
	})
	reply := c.Reply(id)
	if reply.Error != nil {
		t.Fatalf("session/prompt after cancel: %+v", reply.Error)
	}
	if _, err := os.Stat(filepath.Join(h.cwd, "cancelled.txt")); !os.IsNotExist(err) {
		t.Errorf("the tool ran although its turn was cancelled: %v", err)
	}
	// A cancelled prompt is answered without waiting for the turn's queued
	// events; the record catches up.
	var res []map[string]any
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, res, _ = approvalsOf(t, c, sid); len(res) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(res) != 1 || res[0]["by"] != "policy" || res[0]["allowed"] != false || res[0]["cancelled"] != true ||
		!strings.Contains(res[0]["reason"].(string), "cancelled") {
		t.Fatalf("approval.resolved %v", res)
	}
}
