package core

import "context"

// WindowReader reads the summary of a session's active branch since its
// last boundary, so that the live paths (checkpoints, compaction,
// restoration, the context-pressure controller) never read a whole session.
type WindowReader interface {
	// Window returns the summary of sessionID's active branch as of its
	// head: what core/checkpoint's Track gives when folded over the branch
	// from the root (checkpoint.WindowOf). A store keeps it up to date as
	// entries are appended under the head; after a branch switch (MoveHead,
	// AppendTo under an older entry) it is rebuilt from the entries since
	// the last boundary. A missing session wraps ErrNotFound; an unsound
	// branch is CodeCorrupt, as for ActiveBranch.
	Window(ctx context.Context, sessionID string) (Window, error)
}

// Window is what the record says about a session's active branch since its
// last boundary (the newest `compaction` entry), plus a few facts about the
// whole branch (the model and effort last set). It is built by folding the
// branch's entries in order (core/checkpoint's Track); each field says what
// it counts. It is plain data, so a store can keep it as a summary row and
// update it on every append.
type Window struct {
	// HeadID and HeadSeq are the newest entry folded in ("" and 0 when
	// none).
	HeadID  string `json:"headId,omitempty"`
	HeadSeq int64  `json:"headSeq,omitempty"`

	// BoundaryID and BoundarySeq are the newest `compaction` entry ("" and
	// 0 when the branch has none); BoundaryCheckpointID is the checkpoint
	// entry it names, and BoundaryCheckpointSeen says that entry was the
	// newest checkpoint folded in before the boundary (the layout a commit
	// writes), so it is on the branch.
	BoundaryID             string `json:"boundaryId,omitempty"`
	BoundarySeq            int64  `json:"boundarySeq,omitempty"`
	BoundaryCheckpointID   string `json:"boundaryCheckpointId,omitempty"`
	BoundaryCheckpointSeen bool   `json:"boundaryCheckpointSeen,omitempty"`

	// Entries counts the entries after the boundary; Tokens sums their
	// stored token estimates.
	Entries int64 `json:"entries,omitempty"`
	Tokens  int64 `json:"tokens,omitempty"`

	// Conversation counts the conversation entries after the boundary: not
	// bookkeeping, and not inside a closed checkpoint exchange (Dropped).
	Conversation int64 `json:"conversation,omitempty"`
	// Dropped are the closed checkpoint exchanges after the boundary: the
	// entries with From < seq < To are Bridge's checkpoint prompt and the
	// model's reply, left out of projections.
	Dropped []SeqSpan `json:"dropped,omitempty"`

	// Pending is the open checkpoint request (a compaction.requested with
	// no compaction or compaction.failed after it), or nil.
	Pending *Entry `json:"pending,omitempty"`
	// PendingConversation counts the conversation entries since Pending
	// (dropped if the exchange closes); Provisional says one of them is
	// work.
	PendingConversation int64 `json:"pendingConversation,omitempty"`
	Provisional         bool  `json:"provisional,omitempty"`

	// MeaningfulWork and WorkerDone are checkpoint.Activity's.
	MeaningfulWork bool `json:"meaningfulWork,omitempty"`
	WorkerDone     bool `json:"workerDone,omitempty"`

	// OpenTools and OpenApprovals are the tool calls started and approvals
	// requested after the boundary and not closed, in the order they
	// opened (an id opened twice counts twice).
	OpenTools     []OpenCall `json:"openTools,omitempty"`
	OpenApprovals []OpenCall `json:"openApprovals,omitempty"`

	// Decisions and Files are the checkpoint evidence after the boundary
	// (checkpoint.Evidence), trimmed and de-duplicated in record order.
	Decisions []string `json:"decisions,omitempty"`
	Files     []string `json:"files,omitempty"`

	// LastUserID is the newest user.message after the boundary whose text
	// is not blank.
	LastUserID string `json:"lastUserId,omitempty"`

	// Model and Effort are the newest model.changed model and
	// effort.changed effort on the whole branch (not reset by a boundary).
	Model  string `json:"model,omitempty"`
	Effort string `json:"effort,omitempty"`

	// LastCheckpointID and LastCheckpointDecisions are the newest
	// checkpoint entry on the branch and its decisions (carried forward by
	// the boundary that commits it).
	LastCheckpointID        string   `json:"lastCheckpointId,omitempty"`
	LastCheckpointDecisions []string `json:"lastCheckpointDecisions,omitempty"`
}

// SeqSpan is an open interval of sequence numbers: From < seq < To.
type SeqSpan struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Contains reports whether From < seq < To.
func (s SeqSpan) Contains(seq int64) bool { return s.From < seq && seq < s.To }

// OpenCall is an id opened N times and not closed yet.
type OpenCall struct {
	ID string `json:"id"`
	N  int    `json:"n"`
}

// Bookkeeping reports whether k belongs to the checkpoint machinery rather
// than to the conversation (left out of projections and retention plans).
func (k Kind) Bookkeeping() bool {
	switch k {
	case KindCompactionRequest, KindCheckpoint, KindCompaction,
		KindCompactionFailed, KindBranchSummary, KindSessionRestored,
		KindSessionResumeFail, KindContextUsage, KindUsageReported:
		return true
	}
	return false
}
