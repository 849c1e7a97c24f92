package checkpoint

import (
	"encoding/json"

	"github.com/bridge-dev/bridge/core"
)

// LastBoundary returns the index in branch (root first) of the newest
// `compaction` entry, or -1 when there is none. Everything after it is "since
// the last boundary".
func LastBoundary(branch []core.Entry) int {
	for i := len(branch) - 1; i >= 0; i-- {
		if branch[i].Kind == core.KindCompaction {
			return i
		}
	}
	return -1
}

// Activity is what the record says about the session since the last
// boundary.
type Activity struct {
	// BoundaryIndex is LastBoundary(branch).
	BoundaryIndex int
	// ToolsInFlight are tool ids started and not completed, oldest first.
	ToolsInFlight []string
	// ApprovalsPending are approval ids requested and not resolved.
	ApprovalsPending []string
	// MeaningfulWork: a user or assistant message, a completed tool, a
	// worker result or an artifact appeared since the boundary, outside a
	// failed or repaired checkpoint exchange.
	MeaningfulWork bool
	// WorkerDone: the work since the boundary ends with a worker.result
	// whose status is completed (a sub-agent's final result, say): that
	// result is the durable record, and nothing came after it to save.
	WorkerDone bool
}

// Apply copies the record-derived facts into s.
func (a Activity) Apply(s State) State {
	s.ToolInFlight = len(a.ToolsInFlight) > 0
	s.ApprovalPending = len(a.ApprovalsPending) > 0
	s.MeaningfulWork = a.MeaningfulWork
	s.WorkerDone = s.WorkerDone || a.WorkerDone
	return s
}

// BranchActivity scans the entries after the last boundary: a tool.started
// without a later tool.completed of the same toolId is in flight, an
// approval.requested without an approval.resolved of the same approvalId is
// pending (listed in the order they opened; an id closed as often as it was
// opened is closed). (A checkpoint is never committed while either is open,
// so nothing before the boundary can still be open in a live session.)
// Entries with an unreadable payload count as having an empty id. It is
// ActivityOf(WindowOf(branch)): the answer a store's window summary gives
// without reading the branch.
func BranchActivity(branch []core.Entry) Activity {
	a := ActivityOf(WindowOf(branch))
	a.BoundaryIndex = LastBoundary(branch)
	return a
}

func toolID(raw json.RawMessage) string { return memberString(raw, "toolId") }

func approvalID(raw json.RawMessage) string { return memberString(raw, "approvalId") }

// textOf returns the "text" member of a message payload.
func textOf(raw json.RawMessage) string { return memberString(raw, "text") }

// bookkeepingKind reports whether k belongs to the checkpoint machinery
// rather than to the conversation (left out of projections and plans).
func bookkeepingKind(k core.Kind) bool { return k.Bookkeeping() }

// tokensOf is an entry's token estimate: the stored one, else a quarter of
// its payload bytes (at least 1).
func tokensOf(e core.Entry) int64 {
	if e.TokenEstimate > 0 {
		return e.TokenEstimate
	}
	return int64(len(e.Payload)+3)/4 + 1
}
