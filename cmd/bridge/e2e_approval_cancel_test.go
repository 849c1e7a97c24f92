package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// TestE2EApprovalCancelledTurn: with real Claude Code, the client is asked
// and does not answer; session/cancel makes Bridge withdraw the request
// ($/cancelRequest with its id), the preset's policy refuses the tool, the
// tool never runs, and the turn ends.
func TestE2EApprovalCancelledTurn(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{})
	toolOnce(h, "create cancelled.txt", approvalCases[0].call(h, "cancelled.txt"))
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c := startBridge(t, h.dataDir)
	c.SetOnRequest(func(m wireMsg) (any, *wireError) {
		<-release // a user who never answers
		return nil, &wireError{Code: -32800, Message: "too late"}
	})
	c.initializeWith(schema.ClientCapabilities{Session: &schema.SessionClientCapabilities{RequestPermission: true}}, nil)
	sid := h.create(t, c, "claude-code", "cancel")
	id := c.Request("session/prompt", schema.SessionPromptParams{SessionID: sid, Content: prompt("create cancelled.txt")})
	ask := c.AwaitRequest("session/requestPermission")
	_, err := c.SessionCancel(t.Context(), schema.SessionCancelParams{SessionID: sid})
	must(t, "session/cancel", err)
	rpctest.Await(c.Client, schema.NoticeCancelRequest, func(p schema.CancelParams) bool {
		return string(mustJSON(p.ID)) == string(ask.ID)
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
	var res []core.ApprovalResolvedPayload
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, res, _ = approvalsOf(t, c, sid); len(res) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(res) != 1 || res[0].By != "policy" || res[0].Allowed || !res[0].Cancelled || !strings.Contains(res[0].Reason, "cancelled") {
		t.Fatalf("approval.resolved %v", res)
	}
}
