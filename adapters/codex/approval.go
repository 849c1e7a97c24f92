package codex

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// askingPolicy is the approval policy Bridge starts and resumes threads
// with: Codex asks (item/commandExecution/requestApproval,
// item/fileChange/requestApproval) before running anything it does not
// trust, and Bridge relays the question (core.CreateRequest.Approve).
const askingPolicy = "untrusted"

// approvalParams is the part of Codex's approval request params Bridge
// reads (command execution, file change, and the legacy v1 pair).
type approvalParams struct {
	ApprovalID *string         `json:"approvalId"`
	ItemID     string          `json:"itemId"`
	CallID     string          `json:"callId"`
	Command    json.RawMessage `json:"command"` // v2: a string; v1: an argv array
	Cwd        string          `json:"cwd"`
	Reason     *string         `json:"reason"`
	GrantRoot  *string         `json:"grantRoot"`
}

// commandText flattens a command given as a string or an argv array.
func commandText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(raw, &argv) == nil {
		return strings.Join(argv, " ")
	}
	return ""
}

// relayable reports whether method is an approval Bridge relays.
func relayable(method string) bool {
	switch method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval", "execCommandApproval", "applyPatchApproval":
		return true
	}
	return false
}

// approvalRequest relays a command-execution or file-change approval to
// the session's approver off the reader goroutine and answers Codex with
// the decision: accept / acceptForSession / decline (v1: approved /
// approved_for_session / denied).
func (l *live) approvalRequest(id json.RawMessage, method string, params json.RawMessage) {
	var p approvalParams
	_ = json.Unmarshal(params, &p)
	approvalID := p.ItemID
	if p.ApprovalID != nil && *p.ApprovalID != "" {
		approvalID = *p.ApprovalID
	}
	if approvalID == "" {
		approvalID = p.CallID
	}
	if approvalID == "" {
		approvalID = method + ":" + string(id)
	}
	toolCall := p.ItemID
	if toolCall == "" {
		toolCall = p.CallID
	}
	r := core.ApprovalRequest{ID: approvalID, ToolCallID: toolCall}
	if json.Valid(params) {
		r.RawInput = params
	}
	v1 := method == "execCommandApproval" || method == "applyPatchApproval"
	if method == "item/commandExecution/requestApproval" || method == "execCommandApproval" {
		cmd := commandText(p.Command)
		r.Kind, r.Title, r.Key = "execute", "Run: "+cmd, "command:"+cmd
	} else {
		r.Kind, r.Title, r.Key = "edit", "Apply file changes", "fileChange"
		if p.GrantRoot != nil && *p.GrantRoot != "" {
			r.Title += " (write access under " + *p.GrantRoot + ")"
		}
	}
	if p.Reason != nil && *p.Reason != "" {
		r.Title += " — " + *p.Reason
	}
	ctx, cancel := context.WithCancel(context.Background())
	key := string(id)
	l.asks.Add(key, cancel)
	go func() {
		select {
		case <-l.p.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	go func() {
		defer cancel()
		d := l.approval(ctx, r)
		l.asks.Remove(key)
		if ctx.Err() != nil {
			return // Codex resolved it itself, or the process ended
		}
		decision := "decline"
		switch {
		case d.Kind == core.AllowAlways:
			decision = "acceptForSession"
		case d.Allowed():
			decision = "accept"
		}
		if v1 {
			decision = map[string]string{"decline": "denied", "accept": "approved", "acceptForSession": "approved_for_session"}[decision]
		}
		_ = l.p.conn.reply(id, decisionResult{Decision: decision})
	}()
}

// approval asks the session's approver, or applies the preset's policy.
func (l *live) approval(ctx context.Context, r core.ApprovalRequest) core.ApprovalDecision {
	return l.req.Approval(ctx, r)
}

// serverRequestResolved withdraws a pending approval Codex resolved
// without Bridge's answer (serverRequest/resolved).
func (l *live) serverRequestResolved(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) == nil && len(p.RequestID) > 0 {
		l.asks.Cancel(string(p.RequestID))
	}
}
