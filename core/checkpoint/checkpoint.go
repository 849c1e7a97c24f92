// Package checkpoint holds the pure algorithms of Bridge checkpoints and
// restoration (ARCHITECTURE.md, Checkpoints and Restoration). It does no I/O: callers pass in the active
// branch (core.Store.ActiveBranch, root first), the model's reply text, the
// repository status text and the time the process started, and get back
// values to append, prompts to send and projections to inject.
//
// The checkpoint flow, as rpc/service drives it:
//
//  1. Decide whether a reason fires (Decide, with BranchActivity filling the
//     parts of State the record knows).
//  2. Check the lock (FindPending): a busy request refuses, a stale one does
//     not block.
//  3. Scan the evidence (ScanEvidence), plan the retained tail
//     (PlanRetention) and append RequestEntry.
//  4. Send RequestPrompt into the live session; parse the answer with
//     ParseReply. On a bad reply append RequestEntry again with attempt 1 and
//     send RepairPrompt; a second failure appends FailedEntry.
//  5. Assemble the checkpoint (Assemble: gap repair and provenance) and
//     commit CommitEntries plus EvidenceAudit in one transaction.
//
// A dead process gets Reconstruct instead of steps 4 and 5's model reply.
// Restoration uses Project and Render.
package checkpoint

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// SchemaVersion is the version of the checkpoint payload this package writes
// and accepts.
const SchemaVersion = 1

// Provenance says who wrote a checkpoint's meaning: agent (the session's
// own reply), agent+controller (the reply plus evidence Bridge appended) or
// reconstructed (built from the record after the process died).
type Provenance string

// Provenances, who wrote a checkpoint's meaning.
const (
	// ProvenanceAgent: the session's own agent wrote everything.
	ProvenanceAgent Provenance = "agent"
	// ProvenanceAgentController: the agent wrote it and Bridge appended
	// decisions or files the record proves and the reply left out.
	ProvenanceAgentController Provenance = "agent+controller"
	// ProvenanceReconstructed: Bridge rebuilt it from the record and the
	// repository because the process was dead.
	ProvenanceReconstructed Provenance = "reconstructed"
)

// Provenances are the provenances, in the order above.
var Provenances = []Provenance{ProvenanceAgent, ProvenanceAgentController, ProvenanceReconstructed}

// Checkpoint is Bridge's semantic summary of a session: the meaning the
// model writes (Summary, Decisions, FilesTouched, OpenWork) plus the
// bookkeeping Bridge fills itself. It is the payload of a `checkpoint` entry
// and, with checkpointEntryId added, of its `compaction` boundary.
type Checkpoint struct {
	SchemaVersion        int        `json:"schemaVersion"`
	Summary              string     `json:"summary"`
	Decisions            []string   `json:"decisions"`
	FilesTouched         []string   `json:"filesTouched"`
	OpenWork             []string   `json:"openWork,omitempty"`
	SourceAgent          string     `json:"sourceAgent"`
	FirstRetainedEntryID string     `json:"firstRetainedEntryId"`
	TokensBefore         int64      `json:"tokensBefore"`
	Reason               Reason     `json:"reason"`
	Provenance           Provenance `json:"provenance"`
	// Method is how it was obtained: core.CheckpointFork,
	// core.CheckpointInThread or core.CheckpointReconstructed ("" in
	// checkpoints written before Bridge recorded it).
	Method core.CheckpointMethod `json:"method,omitempty"`
	// ForkUsage is what the fork's turns cost, where the harness reports it.
	ForkUsage *core.TokenUsage `json:"forkUsage,omitempty"`
}

// Bookkeeping is what Bridge fills into a checkpoint; the model is never
// asked for it.
type Bookkeeping struct {
	// SourceAgent is the session that wrote the checkpoint (its session id).
	SourceAgent string
	// FirstRetainedEntryID is where the retained tail starts: an existing
	// entry chosen by PlanRetention, or a fresh id that the branch.summary
	// marker will carry when nothing before the checkpoint is retained.
	FirstRetainedEntryID string
	// TokensBefore is the context size when the request was made (the gauge
	// reading, or the sum of token estimates).
	TokensBefore int64
	// Reason is why the checkpoint was written.
	Reason Reason
}

// Validate checks the rules a stored checkpoint must meet: schema version 1,
// a non-empty summary, no empty or duplicate list items, a known reason and
// provenance when set, and tokensBefore ≥ 0. Errors are CodeInvalid.
func (c Checkpoint) Validate() error {
	if c.SchemaVersion != SchemaVersion {
		return core.Errorf(core.CodeInvalid, "checkpoint: schemaVersion is %d, want %d", c.SchemaVersion, SchemaVersion)
	}
	if strings.TrimSpace(c.Summary) == "" {
		return core.E(core.CodeInvalid, "checkpoint: summary is empty", ErrEmptySummary)
	}
	lists := []struct {
		name string
		list []string
	}{{"decisions", c.Decisions}, {"filesTouched", c.FilesTouched}, {"openWork", c.OpenWork}}
	for _, l := range lists {
		name, list := l.name, l.list
		seen := make(map[string]struct{}, len(list))
		for i, s := range list {
			if strings.TrimSpace(s) == "" {
				return core.Errorf(core.CodeInvalid, "checkpoint: %s[%d] is empty", name, i)
			}
			if _, dup := seen[s]; dup {
				return core.Errorf(core.CodeInvalid, "checkpoint: %s[%d] %q is a duplicate", name, i, s)
			}
			seen[s] = struct{}{}
		}
	}
	if c.Reason != "" && !c.Reason.Known() {
		return core.Errorf(core.CodeInvalid, "checkpoint: reason %q is unknown", c.Reason)
	}
	switch c.Provenance {
	case "", ProvenanceAgent, ProvenanceAgentController, ProvenanceReconstructed:
	default:
		return core.Errorf(core.CodeInvalid, "checkpoint: provenance %q is unknown", c.Provenance)
	}
	switch c.Method {
	case "", core.CheckpointFork, core.CheckpointInThread, core.CheckpointReconstructed:
	default:
		return core.Errorf(core.CodeInvalid, "checkpoint: method %q is unknown", c.Method)
	}
	if c.ForkUsage != nil && c.Method != core.CheckpointFork {
		return core.Errorf(core.CodeInvalid, "checkpoint: forkUsage on a %q checkpoint", c.Method)
	}
	if c.TokensBefore < 0 {
		return core.Errorf(core.CodeInvalid, "checkpoint: tokensBefore %d is negative", c.TokensBefore)
	}
	return nil
}

// Payload is the JSON payload of the `checkpoint` entry. Nil lists are
// written as [] so readers always see arrays.
func (c Checkpoint) Payload() json.RawMessage { return core.Payload(withLists(c)) }

// ParsePayload reads a `checkpoint` entry payload and validates it. A payload
// that is not a checkpoint object, or breaks a rule of Validate, is a
// CodeInvalid error saying why.
func ParsePayload(raw json.RawMessage) (Checkpoint, error) {
	var c Checkpoint
	if err := json.Unmarshal(raw, &c); err != nil {
		return Checkpoint{}, core.E(core.CodeInvalid, "checkpoint: payload is not a checkpoint object", err)
	}
	if err := c.Validate(); err != nil {
		return Checkpoint{}, err
	}
	return c, nil
}

// MarkerSummary is the summary text of the branch.summary marker written at
// each commit.
const MarkerSummary = "Compaction boundary; subsequent entries are retained"

// Boundary is the `compaction` entry payload: the checkpoint's fields
// plus the id of the checkpoint entry it commits.
type Boundary struct {
	CheckpointEntryID string `json:"checkpointEntryId"`
	Checkpoint
}

// CommitEntries returns the entries of a checkpoint commit, to append as one
// chain inside one transaction (core.Store.Update), in this order:
//
//   - the `checkpoint` entry, with ID checkpointID;
//   - the `compaction` boundary, whose payload carries the checkpoint's
//     fields and checkpointEntryId = checkpointID;
//   - the `branch.summary` marker, with ID markerID; it becomes the new head.
//
// When the retention plan kept nothing before the checkpoint, pass
// markerID = c.FirstRetainedEntryID (the marker is then the first retained
// entry, as ARCHITECTURE.md, Checkpoints says); otherwise FirstRetainedEntryID names an existing
// entry and markerID must be a fresh id. Project reads either layout.
// The session head's LatestCheckpointID is checkpointID.
func CommitEntries(c Checkpoint, checkpointID, markerID string) []core.NewEntry {
	if c.SchemaVersion == 0 {
		c.SchemaVersion = SchemaVersion
	}
	return []core.NewEntry{
		{ID: checkpointID, Kind: core.KindCheckpoint, Payload: c.Payload()},
		{Kind: core.KindCompaction, Payload: core.Payload(Boundary{CheckpointEntryID: checkpointID, Checkpoint: withLists(c)})},
		{ID: markerID, Kind: core.KindBranchSummary, Payload: core.Payload(core.BranchSummaryPayload{
			Summary:              MarkerSummary,
			CheckpointEntryID:    checkpointID,
			FirstRetainedEntryID: c.FirstRetainedEntryID,
		})},
	}
}

func withLists(c Checkpoint) Checkpoint {
	if c.Decisions == nil {
		c.Decisions = []string{}
	}
	if c.FilesTouched == nil {
		c.FilesTouched = []string{}
	}
	return c
}

// Audit kinds this package builds records for.
const (
	AuditEvidenceVerified  = "checkpoint.evidence_verified"
	AuditCompactionFailed  = "compaction.failed"
	AuditRecoveryCompleted = "compaction.recovery_worker.completed"
	auditSource            = "compaction"
)

// EvidenceAudit is the `checkpoint.evidence_verified` audit record of a
// commit: source "compaction", entity the session, body
// {decisionCount, fileCount, appendedDecisions, appendedFiles, provenance}.
func EvidenceAudit(sessionID string, r GapReport) core.AuditRecord {
	return core.AuditRecord{
		Source: auditSource,
		Kind:   AuditEvidenceVerified,
		Entity: sessionID,
		Body:   core.Payload(r),
	}
}

// Request is the payload of a `compaction.requested` entry.
type Request struct {
	Reason               Reason `json:"reason"`
	Attempt              int    `json:"attempt"`
	TokensBefore         int64  `json:"tokensBefore"`
	SourceAgent          string `json:"sourceAgent,omitempty"`
	FirstRetainedEntryID string `json:"firstRetainedEntryId,omitempty"`
	// RepairOf is the problem with the previous reply (attempt 1 only).
	RepairOf string `json:"repairOf,omitempty"`
	// Method is how the checkpoint is asked: core.CheckpointFork (nothing
	// is exchanged in the live conversation) or core.CheckpointInThread.
	Method core.CheckpointMethod `json:"method,omitempty"`
}

// RequestEntry is the `compaction.requested` entry that opens (attempt 0) or
// repairs (attempt 1) a checkpoint request.
func RequestEntry(r Request) core.NewEntry {
	return core.NewEntry{Kind: core.KindCompactionRequest, Payload: core.Payload(r)}
}

// FailedEntry is the `compaction.failed` entry that closes a request whose
// second reply was also unusable (or never came). cause is recorded as text.
func FailedEntry(reason Reason, attempt int, cause error) core.NewEntry {
	p := core.CompactionFailedPayload{Reason: string(reason), Attempt: attempt}
	if cause != nil {
		p.Error = cause.Error()
	}
	return core.NewEntry{Kind: core.KindCompactionFailed, Payload: core.Payload(p)}
}

// FailedAudit is the `compaction.failed` audit record matching FailedEntry.
func FailedAudit(sessionID string, reason Reason, attempt int, cause error) core.AuditRecord {
	p := struct {
		core.CompactionFailedPayload
		Code string `json:"code,omitempty"`
	}{CompactionFailedPayload: core.CompactionFailedPayload{Reason: string(reason), Attempt: attempt}}
	if cause != nil {
		p.Error = cause.Error()
		p.Code = string(core.ErrorCode(cause))
	}
	return core.AuditRecord{Source: auditSource, Kind: AuditCompactionFailed, Entity: sessionID, Body: core.Payload(p)}
}

// Assemble turns a parsed reply into the checkpoint to commit: the evidence
// gap is repaired (FillGaps), provenance set, and the bookkeeping filled.
func Assemble(d Draft, ev Evidence, b Bookkeeping) (Checkpoint, GapReport) {
	d, rep := FillGaps(d, ev)
	return Checkpoint{
		SchemaVersion:        SchemaVersion,
		Summary:              d.Summary,
		Decisions:            nonNil(d.Decisions),
		FilesTouched:         nonNil(d.FilesTouched),
		OpenWork:             d.OpenWork,
		SourceAgent:          b.SourceAgent,
		FirstRetainedEntryID: b.FirstRetainedEntryID,
		TokensBefore:         b.TokensBefore,
		Reason:               b.Reason,
		Provenance:           rep.Provenance,
	}, rep
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// String renders a checkpoint's meaning briefly, for logs.
func (c Checkpoint) String() string {
	return fmt.Sprintf("checkpoint(%s, %s, %d decisions, %d files, %d open)", c.Reason, c.Provenance,
		len(c.Decisions), len(c.FilesTouched), len(c.OpenWork))
}
