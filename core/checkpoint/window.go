package checkpoint

import (
	"bytes"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// Track folds one entry, the child of w's head, into the window summary w
// (see core.Window): a `compaction` entry starts a new window; every other
// entry updates the counts, the open tool calls and approvals, the
// checkpoint exchange, the work seen and the evidence. A store calls it on
// every append, so that BranchActivity, ScanEvidence and FindPending's
// answers (ActivityOf, EvidenceOf, PendingOf) cost one small row whatever
// the session's length. Only the payloads of the kinds that matter are
// read, one or two members each.
func Track(w *core.Window, e core.Entry) {
	w.HeadID, w.HeadSeq = e.ID, e.Seq
	switch e.Kind {
	case core.KindModelChanged:
		if m := memberString(e.Payload, "model"); m != "" {
			w.Model = m
		}
	case core.KindEffortChanged:
		if m := memberString(e.Payload, "effort"); m != "" {
			w.Effort = m
		}
	case core.KindCompaction:
		ref := memberString(e.Payload, "checkpointEntryId")
		seen := ref != "" && ref == w.LastCheckpointID
		*w = core.Window{HeadID: e.ID, HeadSeq: e.Seq, BoundaryID: e.ID, BoundarySeq: e.Seq,
			BoundaryCheckpointID: ref, BoundaryCheckpointSeen: seen,
			Model: w.Model, Effort: w.Effort,
			LastCheckpointID: w.LastCheckpointID, LastCheckpointDecisions: w.LastCheckpointDecisions}
		if seen {
			for _, d := range w.LastCheckpointDecisions {
				w.Decisions = addItem(w.Decisions, []byte(d))
			}
		}
		return
	}
	w.Entries++
	w.Tokens += e.TokenEstimate
	exchange := inExchange(w)
	if !e.Kind.Bookkeeping() {
		w.Conversation++
		if exchange {
			w.PendingConversation++
		}
	}
	// Work inside a checkpoint exchange (a request answered by a failure
	// or a repair) is Bridge's own prompt and the model's reply, not work.
	// A checkpoint asked of a fork has no exchange in the live thread:
	// what is recorded meanwhile is the conversation going on.
	work := func() {
		if exchange {
			w.Provisional = true
		} else {
			w.MeaningfulWork = true
			w.WorkerDone = false
		}
	}
	switch e.Kind {
	case core.KindToolStarted:
		w.OpenTools = openCall(w.OpenTools, toolID(e.Payload))
	case core.KindToolCompleted:
		w.OpenTools = closeCall(w.OpenTools, toolID(e.Payload))
		work()
	case core.KindApprovalRequested:
		w.OpenApprovals = openCall(w.OpenApprovals, approvalID(e.Payload))
	case core.KindApprovalResolved:
		w.OpenApprovals = closeCall(w.OpenApprovals, approvalID(e.Payload))
	case core.KindUserMessage:
		work()
		if strings.TrimSpace(textOf(e.Payload)) != "" {
			w.LastUserID = e.ID
		}
	case core.KindAssistantMessage:
		work()
	case core.KindArtifactCreated:
		work()
		w.Files = addItem(w.Files, []byte(memberString(e.Payload, "path")))
	case core.KindWorkerResult:
		work()
		if !exchange {
			w.WorkerDone = memberString(e.Payload, "status") == "completed"
		}
		eachMemberString(e.Payload, "decisions", func(b []byte) { w.Decisions = addItem(w.Decisions, b) })
		eachMemberString(e.Payload, "filesChanged", func(b []byte) { w.Files = addItem(w.Files, b) })
	case core.KindCheckpoint:
		w.LastCheckpointID, w.LastCheckpointDecisions = e.ID, nil
		eachMemberString(e.Payload, "decisions", func(b []byte) {
			w.Decisions = addItem(w.Decisions, b)
			if b = bytes.TrimSpace(b); len(b) > 0 {
				w.LastCheckpointDecisions = append(w.LastCheckpointDecisions, string(b))
			}
		})
	case core.KindCompactionRequest:
		if exchange {
			attempt := requestAttempt(e.Payload)
			if attempt == 0 && w.Provisional {
				w.MeaningfulWork = true // the earlier request's process died; that was real work
			}
			if attempt > 0 {
				dropExchange(w, e.Seq)
			}
		}
		p := e
		w.Pending, w.Provisional, w.PendingConversation = &p, false, 0
	case core.KindCompactionFailed:
		if exchange {
			dropExchange(w, e.Seq)
		}
		w.Pending, w.Provisional, w.PendingConversation = nil, false, 0
	}
}

// WindowOf folds a whole branch (root first) with Track.
func WindowOf(branch []core.Entry) core.Window {
	var w core.Window
	for _, e := range branch {
		Track(&w, e)
	}
	return w
}

// ActivityOf is BranchActivity's answer from a window summary
// (BoundaryIndex, an index into a branch, is -1: unknown).
func ActivityOf(w core.Window) Activity {
	return Activity{BoundaryIndex: -1, ToolsInFlight: callIDs(w.OpenTools), ApprovalsPending: callIDs(w.OpenApprovals),
		MeaningfulWork: w.MeaningfulWork || w.Provisional, WorkerDone: w.WorkerDone}
}

// EvidenceOf is ScanEvidence's answer from a window summary.
func EvidenceOf(w core.Window) Evidence {
	ev := Evidence{BoundaryEntryID: w.BoundaryID, Scanned: int(w.Entries)}
	if len(w.Decisions) > 0 {
		ev.Decisions = append([]string(nil), w.Decisions...)
	}
	if len(w.Files) > 0 {
		ev.Files = append([]string(nil), w.Files...)
	}
	return ev
}

// PendingOf is FindPending's answer from a window summary.
func PendingOf(w core.Window, processStart time.Time) Lock {
	return pendingLock(w.Pending, processStart)
}

// inExchange reports whether a checkpoint exchange is open in the live
// thread: a pending request that was not asked of a fork.
func inExchange(w *core.Window) bool {
	return w.Pending != nil && !forkRequest(w.Pending.Payload)
}

// forkRequest reports whether a compaction.requested payload says the
// checkpoint is asked of a fork (method "fork"): nothing of it is in the
// live conversation.
func forkRequest(raw []byte) bool {
	return core.CheckpointMethod(memberString(raw, "method")) == core.CheckpointFork
}

// dropExchange closes the checkpoint exchange opened by w.Pending at seq
// to: its conversation entries leave the projection.
func dropExchange(w *core.Window, to int64) {
	w.Dropped = append(w.Dropped, core.SeqSpan{From: w.Pending.Seq, To: to})
	w.Conversation -= w.PendingConversation
}

// openCall counts one more opening of id, in opening order.
func openCall(calls []core.OpenCall, id string) []core.OpenCall {
	for i := range calls {
		if calls[i].ID == id {
			calls[i].N++
			return calls
		}
	}
	return append(calls, core.OpenCall{ID: id, N: 1})
}

// closeCall closes one opening of id; an id closed as often as it was
// opened leaves the list. Closing an id that is not open does nothing.
func closeCall(calls []core.OpenCall, id string) []core.OpenCall {
	for i := range calls {
		if calls[i].ID == id {
			if calls[i].N--; calls[i].N <= 0 {
				return append(calls[:i], calls[i+1:]...)
			}
			return calls
		}
	}
	return calls
}

func callIDs(calls []core.OpenCall) []string {
	if len(calls) == 0 {
		return nil
	}
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.ID
	}
	return out
}

// addItem appends b, trimmed, to items unless it is blank or already there.
func addItem(items []string, b []byte) []string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return items
	}
	for _, s := range items {
		if s == string(b) {
			return items
		}
	}
	return append(items, string(b))
}
