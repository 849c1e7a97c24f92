package claudecode

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/bridge-dev/bridge/core"
)

// canUseTool is the request of a can_use_tool control request (the CLI
// asks because Bridge passes --permission-prompt-tool stdio).
type canUseTool struct {
	Subtype        string          `json:"subtype"`
	ToolName       string          `json:"tool_name"`
	Input          json.RawMessage `json:"input"`
	ToolUseID      string          `json:"tool_use_id"`
	DecisionReason string          `json:"decision_reason"`
	BlockedPath    string          `json:"blocked_path"`
	Description    string          `json:"description"`
}

// asks tracks the can_use_tool requests being decided, so the CLI's
// control_cancel_request can withdraw one.
type asks struct {
	mu   sync.Mutex
	open map[string]context.CancelFunc
}

func (a *asks) add(id string, cancel context.CancelFunc) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open == nil {
		a.open = map[string]context.CancelFunc{}
	}
	a.open[id] = cancel
}

func (a *asks) done(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.open, id)
}

// cancel withdraws request id; it reports whether it was open.
func (a *asks) cancel(id string) bool {
	a.mu.Lock()
	c := a.open[id]
	delete(a.open, id)
	a.mu.Unlock()
	if c != nil {
		c()
	}
	return c != nil
}

// cancelAll withdraws every open request (the process ended).
func (a *asks) cancelAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, c := range a.open {
		c()
		delete(a.open, id)
	}
}

// toolKind maps a Claude Code tool name to ACP's tool kinds.
func toolKind(name string) string {
	switch name {
	case "Bash", "BashOutput", "KillShell", "KillBash":
		return "execute"
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		return "edit"
	case "Read", "NotebookRead":
		return "read"
	case "Grep", "Glob", "LS":
		return "search"
	case "WebFetch", "WebSearch":
		return "fetch"
	case "TodoWrite", "ExitPlanMode":
		return "think"
	}
	return "other"
}

// toolTitle is a one-line description of a tool call.
func toolTitle(name string, input json.RawMessage) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	for _, k := range []string{"command", "file_path", "notebook_path", "path", "pattern", "url", "query"} {
		if v, ok := in[k].(string); ok && v != "" {
			v = strings.ReplaceAll(v, "\n", " ")
			if len(v) > 200 {
				v = v[:200] + "…"
			}
			return name + ": " + v
		}
	}
	return name
}

// permissionRequest answers a can_use_tool control request: Bridge's
// approver decides (the client's user, or the preset's policy) off the
// reader goroutine, and the answer goes back as a control_response. Other
// control requests are refused at once.
func (l *live) permissionRequest(m *streamMsg, raw []byte) {
	var req canUseTool
	_ = json.Unmarshal(m.Request, &req)
	if req.Subtype != "can_use_tool" {
		l.writeJSON(controlResponseLine{Type: "control_response", Response: controlResponse{
			Subtype: "error", RequestID: m.RequestID,
			Error: "bridge does not answer control request " + strconv.Quote(req.Subtype)}})
		l.sink(core.Event{Entry: harnessEvent("control_request/"+req.Subtype, msgID(m.RequestID, raw), raw)})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.asks.add(m.RequestID, cancel)
	ar := core.ApprovalRequest{ID: req.ToolUseID, ToolCallID: req.ToolUseID, Title: toolTitle(req.ToolName, req.Input),
		Kind: toolKind(req.ToolName), RawInput: req.Input, Key: req.ToolName}
	if ar.ID == "" {
		ar.ID = m.RequestID
	}
	requestID := m.RequestID
	go func() {
		defer cancel()
		d := l.approve(ctx, ar)
		l.asks.done(requestID)
		if ctx.Err() != nil {
			return // withdrawn by the CLI, or the process ended
		}
		var resp permissionDecision
		if d.Allowed() {
			input := req.Input
			if len(input) == 0 || !json.Valid(input) {
				input = json.RawMessage(`{}`)
			}
			resp = permissionDecision{Behavior: "allow", UpdatedInput: input, ToolUseID: req.ToolUseID}
		} else {
			msg := "The user refused permission to use " + req.ToolName + "."
			if d.By != core.DecidedByUser {
				msg = "Permission to use " + req.ToolName + " was refused (" + d.Reason + ")."
			}
			resp = permissionDecision{Behavior: "deny", Message: msg, ToolUseID: req.ToolUseID}
		}
		l.writeJSON(controlResponseLine{Type: "control_response", Response: controlResponse{
			Subtype: "success", RequestID: requestID, Response: &resp}})
	}()
}

// approve asks the session's approver, or applies the preset's policy.
func (l *live) approve(ctx context.Context, r core.ApprovalRequest) core.ApprovalDecision {
	return l.req.Approval(ctx, r)
}
