package opencode

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// asked is the properties of a permission.asked event: OpenCode's
// permission config says "ask" for what a tool call wants to do.
type asked struct {
	ID         string          `json:"id"`
	SessionID  string          `json:"sessionID"`
	Permission string          `json:"permission"`
	Patterns   []string        `json:"patterns"`
	Metadata   json.RawMessage `json:"metadata"`
	Tool       *struct {
		MessageID string `json:"messageID"`
		CallID    string `json:"callID"`
	} `json:"tool"`
}

// permissionKind maps an OpenCode permission to ACP's tool kinds.
func permissionKind(p string) string {
	switch p {
	case "edit", "write", "patch":
		return "edit"
	case "bash":
		return "execute"
	case "read":
		return "read"
	case "glob", "grep", "list", "codesearch":
		return "search"
	case "webfetch", "websearch":
		return "fetch"
	}
	return "other"
}

// permissionEvent relays permission.asked to the session's approver off the
// event stream and answers OpenCode (POST /permission/{id}/reply: once,
// always or reject); permission.replied withdraws a request still open.
func (l *live) permissionEvent(ev event) {
	switch ev.Type {
	case "permission.replied":
		l.withdraw(ev)
		return
	case "permission.asked":
	default:
		return
	}
	var a asked
	if err := json.Unmarshal(ev.Properties, &a); err != nil || a.ID == "" {
		return
	}
	r := core.ApprovalRequest{ID: a.ID, Kind: permissionKind(a.Permission), Key: "opencode:" + a.Permission,
		Title: strings.TrimSpace(a.Permission + ": " + strings.Join(a.Patterns, ", "))}
	if a.Tool != nil {
		r.ToolCallID = a.Tool.CallID
	}
	if len(a.Metadata) > 0 && json.Valid(a.Metadata) {
		r.RawInput = a.Metadata
	}
	l.answerOffStream(a.ID, func(ctx context.Context, req core.CreateRequest) func() {
		d := req.Approval(ctx, r)
		return func() {
			reply := "reject"
			switch {
			case d.Kind == core.AllowAlways:
				reply = "always"
			case d.Allowed():
				reply = "once"
			}
			body := permissionReply{Reply: reply}
			if reply == "reject" && d.By != core.DecidedByUser && d.Reason != "" {
				body.Message = "Permission refused: " + d.Reason
			}
			_ = l.h.do(l.srv.ctx, l.srv, http.MethodPost, "/permission/"+url.PathEscape(a.ID)+"/reply", dirQuery(l.dir), body, nil)
		}
	})
}

// withdraw cancels the open request a "replied" or "rejected" event names:
// another client answered it.
func (l *live) withdraw(ev event) {
	var p struct {
		RequestID string `json:"requestID"`
	}
	if json.Unmarshal(ev.Properties, &p) == nil && p.RequestID != "" {
		l.perms.Cancel(p.RequestID)
	}
}

// answerOffStream decides request id off the event stream: decide gets
// the session's CreateRequest and a context that ends when the request is
// withdrawn, the session closes or the server ends, and returns the reply
// to send, which is sent only if that context is still live. A request
// seen twice (a stream reconnect) is decided once.
func (l *live) answerOffStream(id string, decide func(ctx context.Context, req core.CreateRequest) (reply func())) {
	ctx, cancel := context.WithCancel(l.srv.ctx)
	if !l.perms.Add(id, cancel) {
		cancel()
		return
	}
	l.mu.Lock()
	req := l.req
	l.mu.Unlock()
	go func() {
		defer cancel()
		go func() {
			select {
			case <-l.closed:
				cancel()
			case <-ctx.Done():
			}
		}()
		reply := decide(ctx, req)
		l.perms.Remove(id)
		if ctx.Err() != nil {
			return // answered elsewhere, or the session or server ended
		}
		reply()
	}()
}
