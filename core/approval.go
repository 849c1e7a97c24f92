package core

import (
	"context"
	"encoding/json"
)

// ApprovalOptionKind is what choosing an approval option means: allow or
// reject, once or always.
type ApprovalOptionKind string

// Approval option kinds, as ACP's session/request_permission spells them.
const (
	AllowOnce    ApprovalOptionKind = "allow_once"
	AllowAlways  ApprovalOptionKind = "allow_always"
	RejectOnce   ApprovalOptionKind = "reject_once"
	RejectAlways ApprovalOptionKind = "reject_always"
)

// ApprovalOptionKinds are the kinds, in the order above.
var ApprovalOptionKinds = []ApprovalOptionKind{AllowOnce, AllowAlways, RejectOnce, RejectAlways}

// DecidedBy says who decided an approval: the client's user, the preset's
// policy, or the policy because the client did not answer in time.
type DecidedBy string

// Who decided an approval (approval.resolved "by").
const (
	DecidedByUser    DecidedBy = "user"    // the client's user answered
	DecidedByPolicy  DecidedBy = "policy"  // the preset's policy (no client, error, cancelled, closed)
	DecidedByTimeout DecidedBy = "timeout" // the client did not answer in time; the policy applied
)

// Deciders are the deciders, in the order above.
var Deciders = []DecidedBy{DecidedByUser, DecidedByPolicy, DecidedByTimeout}

// ApprovalOption is one answer a harness offers for a permission request.
type ApprovalOption struct {
	// ID is the option's id (the harness's own for ACP agents).
	ID string `json:"optionId"`
	// Name is shown to the user.
	Name string `json:"name"`
	// Kind is AllowOnce, AllowAlways, RejectOnce or RejectAlways.
	Kind ApprovalOptionKind `json:"kind"`
}

// Allows reports whether an option kind lets the tool run.
func Allows(kind ApprovalOptionKind) bool { return kind == AllowOnce || kind == AllowAlways }

// DefaultApprovalOptions are the four answers Bridge offers when the
// harness names none of its own.
func DefaultApprovalOptions() []ApprovalOption {
	return []ApprovalOption{
		{ID: string(AllowOnce), Name: "Allow once", Kind: AllowOnce},
		{ID: string(AllowAlways), Name: "Allow always", Kind: AllowAlways},
		{ID: string(RejectOnce), Name: "Reject once", Kind: RejectOnce},
		{ID: string(RejectAlways), Name: "Reject always", Kind: RejectAlways},
	}
}

// ApprovalRequest is a harness asking whether a tool may run.
type ApprovalRequest struct {
	// ID identifies the request within the session (the harness's own
	// request or tool call id).
	ID string
	// ToolCallID is the tool call the request is about.
	ToolCallID string
	// Title is a short human-readable description ("Bash: touch a.txt").
	Title string
	// Kind is the tool kind, in ACP's spelling: read, edit, delete, move,
	// search, execute, think, fetch, other.
	Kind string
	// RawInput is the tool's input as the harness gave it.
	RawInput json.RawMessage
	// Key groups requests that an "always" answer covers (a tool name, a
	// request kind); "" means Kind.
	Key string
	// Options are the answers the harness offers; nil means
	// DefaultApprovalOptions.
	Options []ApprovalOption
	// Question marks a question the harness asks its user rather than a
	// tool's permission: each allow-kind option is an answer, a
	// reject-kind option dismisses it. Only the user answers a question:
	// the preset's policy always dismisses one.
	Question bool
}

// ApprovalDecision is the answer to an ApprovalRequest.
type ApprovalDecision struct {
	// OptionID is the chosen option's id.
	OptionID string
	// Kind is the chosen option's kind.
	Kind ApprovalOptionKind
	// By says who decided (DecidedByUser, DecidedByPolicy, DecidedByTimeout).
	By DecidedBy
	// Reason says why, when the user did not decide.
	Reason string
	// Cancelled is true when the wait ended because the turn was cancelled
	// or the session closed (ACP then answers "cancelled").
	Cancelled bool
}

// Allowed reports whether the decision lets the tool run.
func (d ApprovalDecision) Allowed() bool { return Allows(d.Kind) }

// Approver decides a harness's permission request. It always returns a
// decision (the preset's policy when nobody answers) and blocks until then;
// cancelling ctx (the harness withdrew the request) ends the wait with the
// policy's answer. Adapters call it off their reader goroutine.
type Approver func(ctx context.Context, req ApprovalRequest) ApprovalDecision

// PolicyDecision is the preset's answer to req: allow once when the preset's
// ApprovalPolicy is "approve", otherwise reject once (never a silent allow).
// A question is always dismissed (reject once): no policy answers for the
// user.
func PolicyDecision(p Preset, req ApprovalRequest, by DecidedBy, reason string) ApprovalDecision {
	opts := req.Options
	if len(opts) == 0 {
		opts = DefaultApprovalOptions()
	}
	want := RejectOnce
	if p.ApprovalPolicy == "approve" && !req.Question {
		want = AllowOnce
	}
	d := ApprovalDecision{Kind: want, OptionID: string(want), By: by, Reason: reason}
	// Use the harness's own option of that kind, or of the same effect.
	for _, o := range opts {
		if o.Kind == want {
			d.OptionID = o.ID
			return d
		}
	}
	for _, o := range opts {
		if Allows(o.Kind) == Allows(want) {
			d.OptionID, d.Kind = o.ID, o.Kind
			return d
		}
	}
	return d
}

// Approval asks r.Approve, or applies the preset's policy when r has none.
func (r CreateRequest) Approval(ctx context.Context, req ApprovalRequest) ApprovalDecision {
	if r.Approve == nil {
		return PolicyDecision(r.Preset, req, DecidedByPolicy, "no approver")
	}
	return r.Approve(ctx, req)
}
