package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
)

// defaultApprovalTimeout bounds the wait for the client's answer when
// Options.ApprovalTimeout is not set.
const defaultApprovalTimeout = 5 * time.Minute

// Why a pending approval's wait ended early.
var (
	errTurnCancelled = errors.New("the turn was cancelled")
	errSessionClosed = errors.New("the session was closed")
)

// approvals is a live session's open permission requests and its "always"
// answers.
type approvals struct {
	mu      sync.Mutex
	pending int // requests being decided (asked or not)
	open    map[*struct{}]context.CancelCauseFunc
	always  map[string]core.ApprovalOption // by request key
}

// begin and end count a request being decided.
func (a *approvals) begin() { a.mu.Lock(); a.pending++; a.mu.Unlock() }
func (a *approvals) end()   { a.mu.Lock(); a.pending--; a.mu.Unlock() }

// busy reports whether a request is being decided.
func (a *approvals) busy() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pending > 0
}

// register tracks a pending request; the returned function releases it.
func (a *approvals) register(cancel context.CancelCauseFunc) func() {
	tok := new(struct{})
	a.mu.Lock()
	if a.open == nil {
		a.open = map[*struct{}]context.CancelCauseFunc{}
	}
	a.open[tok] = cancel
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		delete(a.open, tok)
		a.mu.Unlock()
	}
}

// cancelAll ends every pending request's wait with cause.
func (a *approvals) cancelAll(cause error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.open {
		c(cause)
	}
}

// remembered returns the "always" answer given earlier for key.
func (a *approvals) remembered(key string) (core.ApprovalOption, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	o, ok := a.always[key]
	return o, ok
}

// remember keeps an "always" answer for key.
func (a *approvals) remember(key string, o core.ApprovalOption) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.always == nil {
		a.always = map[string]core.ApprovalOption{}
	}
	a.always[key] = o
}

// Approve is the core.Approver Bridge gives each live session: it records
// approval.requested, asks the client (when it declared the capability),
// falls back to the preset's policy, and records approval.resolved with who
// decided.
func (l *Session) Approve(ctx context.Context, req core.ApprovalRequest) core.ApprovalDecision {
	if len(req.Options) == 0 {
		req.Options = core.DefaultApprovalOptions()
	}
	if req.Key == "" {
		req.Key = req.Kind
	}
	if req.ID == "" {
		req.ID = req.ToolCallID
	}
	requested := core.ApprovalRequestedPayload{ApprovalID: req.ID, ToolCallID: req.ToolCallID, Title: req.Title,
		Kind: req.Kind, Options: req.Options, Harness: l.Host.Harness()}
	if len(req.RawInput) > 0 {
		requested.RawInput = req.RawInput
	}
	// Both entries go through the session's event queue: recorded in
	// order with the harness's own events (after what it reported before
	// asking, before the tool's result), without a commit on the way of the
	// answer. Meanwhile the open request itself suppresses checkpoints.
	l.approvals.begin()
	defer l.approvals.end()
	l.Sink(core.Event{Entry: &core.NewEntry{Kind: core.KindApprovalRequested,
		NativeID: "approval:" + req.ID + ":requested", Payload: core.Payload(requested)}})
	d, remembered := l.decide(ctx, req)
	resolved := core.ApprovalResolvedPayload{ApprovalID: req.ID, OptionID: d.OptionID, OptionKind: d.Kind,
		Allowed: d.Allowed(), By: d.By, Reason: d.Reason, Remembered: remembered, Cancelled: d.Cancelled}
	l.Sink(core.Event{Entry: &core.NewEntry{Kind: core.KindApprovalResolved,
		NativeID: "approval:" + req.ID + ":resolved", Payload: core.Payload(resolved)}})
	return d
}

// decide finds the answer: an earlier "always", the client's user, or the
// preset's policy. remembered says an earlier "always" answered.
func (l *Session) decide(ctx context.Context, req core.ApprovalRequest) (core.ApprovalDecision, bool) {
	if o, ok := l.approvals.remembered(req.Key); ok {
		// Answer with this request's option of the same kind when it has one.
		d := core.ApprovalDecision{OptionID: o.ID, Kind: o.Kind, By: core.DecidedByUser}
		for _, x := range req.Options {
			if x.Kind == o.Kind {
				d.OptionID = x.ID
				break
			}
		}
		return d, true
	}
	asker := l.env.Permissions
	if asker == nil {
		return core.PolicyDecision(l.Preset, req, core.DecidedByPolicy,
			"the client did not declare capabilities.session.requestPermission"), false
	}
	timeout := l.env.ApprovalTimeout
	if timeout <= 0 {
		timeout = defaultApprovalTimeout
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	release := l.approvals.register(cancel)
	defer release()
	tctx, stop := context.WithTimeoutCause(wctx, timeout, context.DeadlineExceeded)
	defer stop()
	optionID, err := asker.RequestPermission(tctx, peer.PermissionRequest{SessionID: l.ID, Request: req})
	if err != nil {
		cause := context.Cause(tctx)
		switch {
		case errors.Is(cause, errTurnCancelled), errors.Is(cause, errSessionClosed):
			d := core.PolicyDecision(l.Preset, req, core.DecidedByPolicy, cause.Error())
			d.Cancelled = true
			return d, false
		case ctx.Err() != nil:
			return core.PolicyDecision(l.Preset, req, core.DecidedByPolicy, "the harness withdrew the request"), false
		case errors.Is(cause, context.DeadlineExceeded):
			return core.PolicyDecision(l.Preset, req, core.DecidedByTimeout,
				fmt.Sprintf("the client did not answer within %s", timeout)), false
		}
		return core.PolicyDecision(l.Preset, req, core.DecidedByPolicy, "the client answered with an error: "+err.Error()), false
	}
	if optionID == "" {
		return core.PolicyDecision(l.Preset, req, core.DecidedByPolicy, "the client cancelled the request"), false
	}
	for _, o := range req.Options {
		if o.ID == optionID {
			if o.Kind == core.AllowAlways || o.Kind == core.RejectAlways {
				l.approvals.remember(req.Key, o)
			}
			return core.ApprovalDecision{OptionID: o.ID, Kind: o.Kind, By: core.DecidedByUser}, false
		}
	}
	return core.PolicyDecision(l.Preset, req, core.DecidedByPolicy,
		fmt.Sprintf("the client chose %q, which is not one of the options", optionID)), false
}
