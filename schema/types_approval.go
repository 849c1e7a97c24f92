package schema

import (
	"encoding/json"

	"github.com/bridge-dev/bridge/core"
)

// SessionClientCapabilities are the session features a client supports.
type SessionClientCapabilities struct {
	// RequestPermission is true when the client answers
	// session/requestPermission: Bridge then relays the harnesses' tool
	// approvals to it instead of answering them with the preset's policy.
	RequestPermission bool `json:"requestPermission,omitempty"`
}

// SessionRequestPermissionParams asks the client's user whether a harness
// may run a tool (session/requestPermission, a request from Bridge). It is
// shaped as ACP's session/request_permission.
type SessionRequestPermissionParams struct {
	// SessionID is the Bridge session whose harness asks.
	SessionID string `json:"sessionId"`
	// ToolCall is the tool call the harness wants to make.
	ToolCall PermissionToolCall `json:"toolCall"`
	// Options are the answers on offer, in the harness's order.
	Options []PermissionOption `json:"options"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (p SessionRequestPermissionParams) MarshalJSON() ([]byte, error) {
	type plain SessionRequestPermissionParams
	return json.Marshal(filled(plain(p)))
}

// PermissionToolCall describes the tool call a permission request is about.
type PermissionToolCall struct {
	// ToolCallID is the harness's id of the tool call.
	ToolCallID string `json:"toolCallId"`
	// Title is a short human-readable description of the call.
	Title string `json:"title,omitempty"`
	// Kind is the tool kind in ACP's spelling: read, edit, delete, move,
	// search, execute, think, fetch or other.
	Kind string `json:"kind,omitempty"`
	// RawInput is the tool's input as the harness gave it.
	RawInput json.RawMessage `json:"rawInput,omitempty"`
}

// PermissionOption is one answer to a permission request.
type PermissionOption struct {
	// OptionID identifies the option in the answer.
	OptionID string `json:"optionId"`
	// Name is shown to the user.
	Name string `json:"name"`
	// Kind is "allow_once", "allow_always", "reject_once" or
	// "reject_always". An "always" answer is remembered for the session.
	Kind PermissionOptionKind `json:"kind"`
}

// SessionRequestPermissionResult is the client's answer.
type SessionRequestPermissionResult struct {
	// Outcome is the option selected, or cancelled (the preset's policy
	// then decides, by default reject).
	Outcome PermissionOutcome `json:"outcome"`
}

// PermissionOutcome is "selected" with an optionId, or "cancelled".
type PermissionOutcome struct {
	// Outcome is "selected" or "cancelled".
	Outcome PermissionOutcomeKind `json:"outcome"`
	// OptionID is the selected option (outcome "selected").
	OptionID string `json:"optionId,omitempty"`
}

// PermissionOptionKind is what choosing an option means.
type PermissionOptionKind = core.ApprovalOptionKind

// Permission option kinds (ACP's): core's.
const (
	AllowOnce    = core.AllowOnce
	AllowAlways  = core.AllowAlways
	RejectOnce   = core.RejectOnce
	RejectAlways = core.RejectAlways
)

// PermissionOutcomeKind is "selected" or "cancelled".
type PermissionOutcomeKind string

// Permission outcomes.
const (
	OutcomeSelected  PermissionOutcomeKind = "selected"
	OutcomeCancelled PermissionOutcomeKind = "cancelled"
)

// HostedRequestPermissionParams is a client that hosts sessions relaying its
// harness's permission request to Bridge (hosted/requestPermission): Bridge
// records it, asks the user (session/requestPermission, when the client
// declared it) or applies the preset's policy, and answers with the
// outcome.
type HostedRequestPermissionParams struct {
	// NativeID is the hosted session whose harness asks.
	NativeID string `json:"nativeId"`
	// ToolCall is the tool call the harness wants to make; toolCallId is
	// required.
	ToolCall PermissionToolCall `json:"toolCall"`
	// Options are the answers the harness offers; absent means Bridge's
	// four (allow_once, allow_always, reject_once, reject_always).
	Options []PermissionOption `json:"options,omitempty"`
}

// HostedRequestPermissionResult is the decision: an option selected, or
// cancelled (the turn was cancelled or the session closed).
type HostedRequestPermissionResult struct {
	// Outcome is the option selected, or cancelled.
	Outcome PermissionOutcome `json:"outcome"`
}
