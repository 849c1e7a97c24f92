package checkpoint

import "fmt"

// Reason is why a checkpoint is written.
type Reason string

// The reasons of ARCHITECTURE.md, Checkpoints.
const (
	ReasonPhaseBoundary      Reason = "phase_boundary"
	ReasonBeforeSuspend      Reason = "before_suspend"
	ReasonBeforeDowngrade    Reason = "before_downgrade"
	ReasonBeforeShutdown     Reason = "before_shutdown"
	ReasonBeforeNativeResume Reason = "before_native_resume"
	ReasonManual             Reason = "manual"
	ReasonContextPressure    Reason = "context_pressure"
	ReasonResponseReserve    Reason = "response_reserve"
)

// Reasons lists every reason in a stable order.
var Reasons = []Reason{ReasonPhaseBoundary, ReasonBeforeSuspend, ReasonBeforeDowngrade,
	ReasonBeforeShutdown, ReasonBeforeNativeResume, ReasonManual, ReasonContextPressure,
	ReasonResponseReserve}

// Known reports whether r is one of Reasons.
func (r Reason) Known() bool {
	for _, k := range Reasons {
		if r == k {
			return true
		}
	}
	return false
}

// Automatic reports whether Bridge raises r on its own (every reason but
// manual). A direct chat never fires an automatic reason.
func (r Reason) Automatic() bool { return r != ReasonManual }

// PressurePercent is the share of the window at which context_pressure
// fires.
const PressurePercent = 75

// State describes the session when a reason is raised. The first four
// fields can be read from the record with BranchActivity; the rest come from
// the adapter's capabilities and its latest gauge reading.
type State struct {
	// WorkerDone: a short-lived worker session that already has a valid
	// final result (its result is the durable record; no checkpoint needed).
	WorkerDone bool
	// ToolInFlight: a tool call started and has not completed.
	ToolInFlight bool
	// Dead: the session's harness process is not running, so the
	// checkpoint is rebuilt from the record. No tool can be in flight in a
	// dead process: ToolInFlight never suppresses then.
	Dead bool
	// ApprovalPending: an approval was requested and not resolved.
	ApprovalPending bool
	// MeaningfulWork: something worth keeping happened since the last
	// boundary (a message, a completed tool, a result, an artifact).
	MeaningfulWork bool

	// HasGauge: the harness reports a context gauge (core.CapContextGauge).
	HasGauge bool
	// OwnCompaction: the harness compacts its own window
	// (core.CapCompactCommand or automatic native compaction).
	OwnCompaction bool
	// DirectChat: the session is a direct chat, which never auto-compacts.
	DirectChat bool

	// GaugeUsed and GaugeSize are the latest gauge reading, in tokens.
	GaugeUsed, GaugeSize int64
	// ResponseReserve is the number of tokens kept free for the next
	// response.
	ResponseReserve int64
}

// Suppression names the rule that stopped a checkpoint: the reason is
// unknown, a worker is done, a tool is in flight, an approval is pending,
// nothing new happened, a direct chat, no gauge, the harness owns its
// window, or the gauge is below the threshold.
type Suppression string

// Suppression rules, in the order Decide checks them.
const (
	SuppressedUnknownReason  Suppression = "unknown_reason"      // the reason is not one of Reasons
	SuppressedWorkerDone     Suppression = "worker_done"         // short-lived worker with a valid final result
	SuppressedToolInFlight   Suppression = "tool_in_flight"      // a tool call has not completed
	SuppressedApproval       Suppression = "approval_pending"    // an approval is unresolved
	SuppressedNoWork         Suppression = "no_new_work"         // nothing meaningful since the last boundary
	SuppressedDirectChat     Suppression = "direct_chat"         // direct chats never auto-compact
	SuppressedNoGauge        Suppression = "no_gauge"            // window reasons need a context gauge
	SuppressedNotOwner       Suppression = "harness_owns_window" // the harness compacts its own window
	SuppressedBelowThreshold Suppression = "below_threshold"     // pressure or reserve not reached
)

// Suppressions are the rules, in the order above.
var Suppressions = []Suppression{SuppressedUnknownReason, SuppressedWorkerDone, SuppressedToolInFlight,
	SuppressedApproval, SuppressedNoWork, SuppressedDirectChat, SuppressedNoGauge, SuppressedNotOwner,
	SuppressedBelowThreshold}

// Decision is the outcome of Decide.
type Decision struct {
	Reason Reason `json:"reason"`
	// Fire is true when a checkpoint should be requested now.
	Fire bool `json:"fire"`
	// Suppressed names the rule that stopped it ("" when Fire).
	Suppressed Suppression `json:"suppressed,omitempty"`
	// Detail says why, in words fit for a log line.
	Detail string `json:"detail"`
}

// Decide says whether reason fires in state s. The rules, in order:
//
//  1. the four suppressions of ARCHITECTURE.md, Checkpoints, in its order: a short-lived worker
//     that already has a valid final result; a tool call in flight; an
//     approval pending; no meaningful work since the last boundary (a
//     tool left open by a process that is no longer running is not in
//     flight: see State.Dead). They
//     apply to every reason, manual included (there is nothing consistent
//     to save mid-tool, and nothing new to save without work);
//  2. a direct chat never fires an automatic reason (manual still can);
//  3. context_pressure and response_reserve fire only where Bridge is the
//     sole owner of the window: a gauge is present and the harness has no
//     compaction of its own;
//  4. context_pressure fires at ≥ 75% of the window; response_reserve when
//     used + reserve ≥ the window size.
//
// Every other reason fires once past rules 1 and 2.
func Decide(reason Reason, s State) Decision {
	d := Decision{Reason: reason}
	stop := func(rule Suppression, detail string) Decision {
		d.Suppressed, d.Detail = rule, detail
		return d
	}
	switch {
	case !reason.Known():
		return stop(SuppressedUnknownReason, fmt.Sprintf("reason %q is not a checkpoint reason", reason))
	case s.WorkerDone:
		return stop(SuppressedWorkerDone, "the short-lived worker already has a valid final result")
	case s.ToolInFlight && !s.Dead:
		return stop(SuppressedToolInFlight, "a tool call is in flight")
	case s.ApprovalPending:
		return stop(SuppressedApproval, "an approval is pending")
	case !s.MeaningfulWork:
		return stop(SuppressedNoWork, "no meaningful work since the last boundary")
	case s.DirectChat && reason.Automatic():
		return stop(SuppressedDirectChat, "a direct chat never auto-compacts")
	}
	if reason == ReasonContextPressure || reason == ReasonResponseReserve {
		switch {
		case !s.HasGauge || s.GaugeSize <= 0:
			return stop(SuppressedNoGauge, "the harness reports no context gauge")
		case s.OwnCompaction:
			return stop(SuppressedNotOwner, "the harness compacts its own window")
		}
		if reason == ReasonContextPressure {
			if s.GaugeUsed*100 < s.GaugeSize*PressurePercent {
				return stop(SuppressedBelowThreshold, fmt.Sprintf("context at %d of %d tokens, below %d%%", s.GaugeUsed, s.GaugeSize, PressurePercent))
			}
			d.Fire, d.Detail = true, fmt.Sprintf("context at %d of %d tokens, at or above %d%%", s.GaugeUsed, s.GaugeSize, PressurePercent)
			return d
		}
		if s.GaugeUsed+s.ResponseReserve < s.GaugeSize {
			return stop(SuppressedBelowThreshold, fmt.Sprintf("%d used + %d reserve is below the %d-token window", s.GaugeUsed, s.ResponseReserve, s.GaugeSize))
		}
		d.Fire, d.Detail = true, fmt.Sprintf("%d used + %d reserve reaches the %d-token window", s.GaugeUsed, s.ResponseReserve, s.GaugeSize)
		return d
	}
	d.Fire, d.Detail = true, fmt.Sprintf("%s fires", reason)
	return d
}
