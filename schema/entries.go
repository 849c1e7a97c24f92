package schema

import (
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
)

// EntryKind is one kind of entry as the contract describes it: its name,
// the Go type of its payload, and the payload members every entry of the
// kind holds (core.RequiredFields). The JSON Schema's Entry is the union of
// these, discriminated by kind; its payload definitions are generated from
// the Go types, so a payload's members are declared once, in core (or
// core/checkpoint) where they are written and read.
type EntryKind struct {
	// Kind is the entry kind ("tool.started"…).
	Kind core.Kind
	// Payload is a zero value of the payload's Go type.
	Payload any
	// Required lists the members every payload of the kind holds.
	Required []string
}

// EntryKinds returns every entry kind Bridge writes, in a stable order.
// It is built on each call: only the generator and tests need it.
func EntryKinds() []EntryKind {
	kinds := []EntryKind{
		{Kind: core.KindUserMessage, Payload: core.UserMessagePayload{}},
		{Kind: core.KindAssistantMessage, Payload: core.AssistantMessagePayload{}},
		{Kind: core.KindToolStarted, Payload: core.ToolStartedPayload{}},
		{Kind: core.KindToolCompleted, Payload: core.ToolCompletedPayload{}},
		{Kind: core.KindApprovalRequested, Payload: core.ApprovalRequestedPayload{}},
		{Kind: core.KindApprovalResolved, Payload: core.ApprovalResolvedPayload{}},
		{Kind: core.KindWorkerResult, Payload: core.WorkerResultPayload{}},
		{Kind: core.KindArtifactCreated, Payload: core.ArtifactCreatedPayload{}},
		{Kind: core.KindModelChanged, Payload: core.ModelChangedPayload{}},
		{Kind: core.KindEffortChanged, Payload: core.EffortChangedPayload{}},
		{Kind: core.KindSessionStatus, Payload: core.StatusPayload{}},
		{Kind: core.KindContextCompacted, Payload: core.Compacted{}},
		{Kind: core.KindCompactionRequest, Payload: checkpoint.Request{}},
		{Kind: core.KindCheckpoint, Payload: checkpoint.Checkpoint{}},
		{Kind: core.KindCompaction, Payload: checkpoint.Boundary{}},
		{Kind: core.KindCompactionFailed, Payload: core.CompactionFailedPayload{}},
		{Kind: core.KindBranchSummary, Payload: core.BranchSummaryPayload{}},
		{Kind: core.KindSessionRestored, Payload: core.SessionRestoredPayload{}},
		{Kind: core.KindSessionResumeFail, Payload: core.ResumeFailedPayload{}},
		{Kind: core.KindMigrationHandoff, Payload: core.MigrationHandoffPayload{}},
		{Kind: core.KindContextUsage, Payload: core.ContextUsagePayload{}},
		{Kind: core.KindHarnessEvent, Payload: core.HarnessEventPayload{}},
		{Kind: core.KindPlanUpdated, Payload: core.Plan{}},
		{Kind: core.KindSessionForked, Payload: core.SessionForkedPayload{}},
		{Kind: core.KindUsageReported, Payload: core.Usage{}},
	}
	for i := range kinds {
		kinds[i].Required = core.RequiredFields[kinds[i].Kind]
	}
	return kinds
}
