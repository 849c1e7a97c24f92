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
// pending. (A checkpoint is never committed while either is open, so nothing
// before the boundary can still be open in a live session.) Entries with an
// unreadable payload count as having an empty id.
func BranchActivity(branch []core.Entry) Activity {
	a := Activity{BoundaryIndex: LastBoundary(branch)}
	tools := newOpenSet()
	approvals := newOpenSet()
	// Work inside a checkpoint exchange (a request answered by a failure or
	// a repair) is Bridge's own prompt and the model's reply, not work.
	open, provisional := false, false
	work := func() {
		if open {
			provisional = true
		} else {
			a.MeaningfulWork = true
			a.WorkerDone = false
		}
	}
	for _, e := range branch[a.BoundaryIndex+1:] {
		switch e.Kind {
		case core.KindToolStarted:
			tools.open(toolID(e.Payload))
		case core.KindToolCompleted:
			tools.close(toolID(e.Payload))
			work()
		case core.KindApprovalRequested:
			approvals.open(approvalID(e.Payload))
		case core.KindApprovalResolved:
			approvals.close(approvalID(e.Payload))
		case core.KindUserMessage, core.KindAssistantMessage, core.KindArtifactCreated:
			work()
		case core.KindWorkerResult:
			work()
			if !open {
				a.WorkerDone = memberString(e.Payload, "status") == "completed"
			}
		case core.KindCompactionRequest:
			if open && requestAttempt(e.Payload) == 0 && provisional {
				a.MeaningfulWork = true // the earlier request's process died; that was real work
			}
			open, provisional = true, false
		case core.KindCompactionFailed:
			open, provisional = false, false
		}
	}
	if provisional {
		a.MeaningfulWork = true
	}
	a.ToolsInFlight = tools.list()
	a.ApprovalsPending = approvals.list()
	return a
}

// openSet tracks ids opened and not yet closed, in opening order.
type openSet struct {
	order []string
	count map[string]int // id -> times open
}

func newOpenSet() *openSet { return &openSet{count: map[string]int{}} }

func (o *openSet) open(id string) {
	if o.count[id] == 0 {
		o.order = append(o.order, id)
	}
	o.count[id]++
}

func (o *openSet) close(id string) {
	if o.count[id] > 0 {
		o.count[id]--
	}
}

func (o *openSet) list() []string {
	var out []string
	for _, id := range o.order {
		if o.count[id] > 0 {
			out = append(out, id)
			o.count[id] = 0 // list each id once
		}
	}
	return out
}

func toolID(raw json.RawMessage) string { return memberString(raw, "toolId") }

func approvalID(raw json.RawMessage) string { return memberString(raw, "approvalId") }

// textOf returns the "text" member of a message payload.
func textOf(raw json.RawMessage) string { return memberString(raw, "text") }

// bookkeepingKind reports whether k belongs to the checkpoint machinery
// rather than to the conversation (left out of projections and plans).
func bookkeepingKind(k core.Kind) bool {
	switch k {
	case core.KindCompactionRequest, core.KindCheckpoint, core.KindCompaction,
		core.KindCompactionFailed, core.KindBranchSummary, core.KindSessionRestored,
		core.KindSessionResumeFail, core.KindContextUsage:
		return true
	}
	return false
}

// tokensOf is an entry's token estimate: the stored one, else a quarter of
// its payload bytes (at least 1).
func tokensOf(e core.Entry) int64 {
	if e.TokenEstimate > 0 {
		return e.TokenEstimate
	}
	return int64(len(e.Payload)+3)/4 + 1
}
