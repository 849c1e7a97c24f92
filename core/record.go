// Package core is Bridge's domain: the record model, the ports Bridge needs
// (Store, BridgeHost, clock, ids) and the errors every layer shares.
//
// core imports only the standard library. Start with Entry and Session (the
// record), Store (where the record lives) and BridgeHost (how a harness is
// driven). The orchestration lives in rpc/service; pure algorithms live in
// core/checkpoint and core/handoff.
package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Kind names the type of an entry. The set is open for reading (entries of
// unknown kinds written by an older or newer Bridge are kept and shown) and
// closed for writing (Validate refuses an unknown kind).
type Kind string

// Entry kinds Bridge writes. Required payload fields are listed in
// RequiredFields.
const (
	KindUserMessage       Kind = "user.message"
	KindAssistantMessage  Kind = "assistant.message"
	KindToolStarted       Kind = "tool.started"
	KindToolCompleted     Kind = "tool.completed"
	KindApprovalRequested Kind = "approval.requested"
	KindApprovalResolved  Kind = "approval.resolved"
	KindWorkerResult      Kind = "worker.result"
	KindArtifactCreated   Kind = "artifact.created"
	KindModelChanged      Kind = "model.changed"
	KindEffortChanged     Kind = "effort.changed"
	KindSessionStatus     Kind = "session.status"
	KindContextCompacted  Kind = "context.compacted"
	KindCompactionRequest Kind = "compaction.requested"
	KindCheckpoint        Kind = "checkpoint"
	KindCompaction        Kind = "compaction"
	KindCompactionFailed  Kind = "compaction.failed"
	KindBranchSummary     Kind = "branch.summary"
	KindSessionRestored   Kind = "session.restored"
	KindSessionResumeFail Kind = "session.resume_failed"
	KindMigrationHandoff  Kind = "migration.handoff"
	KindContextUsage      Kind = "context.usage"
	KindHarnessEvent      Kind = "harness.event"
	KindPlanUpdated       Kind = "plan.updated"
	KindSessionForked     Kind = "session.forked"
)

// RequiredFields lists, per known kind, the payload members that must be
// present. A kind missing from this map is unknown to this version of Bridge.
var RequiredFields = map[Kind][]string{
	KindUserMessage:       {"text"},
	KindAssistantMessage:  {"text"},
	KindToolStarted:       {"toolId"},
	KindToolCompleted:     {"toolId"},
	KindApprovalRequested: {"approvalId"},
	KindApprovalResolved:  {"approvalId"},
	KindWorkerResult:      {"status"},
	KindArtifactCreated:   {"path"},
	KindModelChanged:      {"model"},
	KindEffortChanged:     {"effort"},
	KindSessionStatus:     {"status"},
	KindContextCompacted:  {"harness", "trigger"},
	KindCompactionRequest: {"reason", "attempt"},
	KindCheckpoint:        {"summary"},
	KindCompaction:        {"checkpointEntryId"},
	KindCompactionFailed:  {"reason"},
	KindBranchSummary:     {"summary"},
	KindSessionRestored:   {"mode"},
	KindSessionResumeFail: {"reason", "error"},
	KindMigrationHandoff:  {"sourceSessionId", "summary"},
	// context.usage records a harness's context gauge reading.
	KindContextUsage: {"used"},
	// plan.updated is a harness's plan (todo list) as it now stands:
	// steps [{text, status: pending|in_progress|completed}], source.
	KindPlanUpdated: {"steps"},
	// session.forked is the first entry of a session forked from another:
	// where it came from.
	KindSessionForked: {"sourceSessionId", "sourceEntryId"},
	// harness.event keeps a harness message Bridge has no mapping for, whole.
	KindHarnessEvent: {"type"},
	// usage.reported is what a turn cost (core.Usage).
	KindUsageReported: {"inputTokens", "outputTokens"},
}

// Known reports whether this version of Bridge can write entries of kind k.
func (k Kind) Known() bool { _, ok := RequiredFields[k]; return ok }

// IsMessage reports whether k counts as a message for history paging and
// migration folding (user and assistant messages only).
func (k Kind) IsMessage() bool { return k == KindUserMessage || k == KindAssistantMessage }

// Entry is one immutable node of a session's record tree.
type Entry struct {
	ID            string          `json:"id"`
	SessionID     string          `json:"sessionId"`
	ParentID      string          `json:"parentId,omitempty"`
	Seq           int64           `json:"seq"`
	Kind          Kind            `json:"kind"`
	Payload       json.RawMessage `json:"payload"`
	NativeID      string          `json:"nativeId,omitempty"`
	TokenEstimate int64           `json:"tokenEstimate,omitempty"`
	CreatedAt     time.Time       `json:"createdAt"`
}

// NewEntry is an entry before the store has given it an id, sequence number,
// parent and time. ID may be set by the caller when another record must point
// at it (a branch.summary marker whose id is firstRetainedEntryId); NativeID,
// when set, makes the append idempotent per session (an import that sees the
// same native id twice adds nothing).
type NewEntry struct {
	ID            string
	Kind          Kind
	Payload       json.RawMessage
	NativeID      string
	TokenEstimate int64
	// At is when the harness wrote the entry (an imported transcript's
	// own time); zero means the time of the append. An import that finds
	// the entry already recorded (by NativeID) sets its time to At.
	At time.Time
}

// Validate checks that e has a known kind and a JSON object payload holding
// every required field.
func (e NewEntry) Validate() error {
	req, ok := RequiredFields[e.Kind]
	if !ok {
		return E(CodeInvalid, fmt.Sprintf("entry kind %q is unknown", e.Kind), nil)
	}
	if !validJSON(e.Payload) {
		var obj map[string]json.RawMessage
		return E(CodeInvalid, fmt.Sprintf("entry %s: payload must be a JSON object", e.Kind), json.Unmarshal(e.Payload, &obj))
	}
	keys, ok := topKeys(e.Payload)
	if !ok {
		return E(CodeInvalid, fmt.Sprintf("entry %s: payload must be a JSON object", e.Kind), nil)
	}
	for _, f := range req {
		if !slices.Contains(keys, f) {
			return E(CodeInvalid, fmt.Sprintf("entry %s: payload is missing %q", e.Kind, f), nil)
		}
	}
	return nil
}

// topKeys lists the member names of a valid JSON document that is an
// object (ok is false for any other value), without decoding the values:
// Validate runs on every entry written.
func topKeys(b []byte) (keys []string, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	depth := 0
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			end := stringEnd(b, i)
			if depth == 1 {
				if j := skipSpace(b, end+1); j < len(b) && b[j] == ':' {
					if raw := b[i+1 : end]; !bytes.ContainsRune(raw, '\\') {
						keys = append(keys, string(raw))
					} else if k := ""; json.Unmarshal(b[i:end+1], &k) == nil {
						keys = append(keys, k)
					}
				}
			}
			i = end
		}
	}
	return keys, true
}

// stringEnd returns the index of the quote closing the JSON string that
// starts at b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(b) - 1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// Payload marshals v into a payload, panicking only on values that cannot be
// JSON (a programming error).
func Payload(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("core.Payload: %v", err))
	}
	return b
}

// RestoreMode is how a session came back: hot (the adapter process was
// still running), native (the harness resumed its own stored thread and
// proved it), checkpoint_restored (a fresh process was given the latest
// checkpoint and the entries after it) or fresh (no prior context).
type RestoreMode string

// Restoration modes a resumed session reports.
const (
	ModeHot                RestoreMode = "hot"
	ModeNative             RestoreMode = "native"
	ModeCheckpointRestored RestoreMode = "checkpoint_restored"
	ModeFresh              RestoreMode = "fresh"
)

// RestoreModes are the modes, in the order above.
var RestoreModes = []RestoreMode{ModeHot, ModeNative, ModeCheckpointRestored, ModeFresh}

// Session is the head record of one conversation with one harness.
type Session struct {
	ID                 string `json:"sessionId"`
	Harness            string `json:"harness"`
	Cwd                string `json:"cwd,omitempty"`
	Title              string `json:"title,omitempty"`
	Preset             string `json:"preset,omitempty"`
	Model              string `json:"model,omitempty"`
	Effort             string `json:"effort,omitempty"`
	NativeSessionID    string `json:"nativeSessionId,omitempty"`
	HeadID             string `json:"headId,omitempty"`
	RestoreMode        string `json:"restoreMode,omitempty"`
	LatestCheckpointID string `json:"latestCheckpointId,omitempty"`
	Archived           bool   `json:"archived"`
	// LastStatus is the status of the session's newest session.status
	// entry ("stopped", "suspended", …; "" when there is none), kept by the
	// store.
	LastStatus string    `json:"lastStatus,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// SessionPatch changes head fields of a session; nil fields are left alone.
type SessionPatch struct {
	Title              *string
	Preset             *string
	Model              *string
	Effort             *string
	NativeSessionID    *string
	RestoreMode        *string
	LatestCheckpointID *string
	Archived           *bool
}

// Ptr returns a pointer to v, for filling SessionPatch.
func Ptr[T any](v T) *T { return &v }

// AuditRecord is an event about the record itself (checkpoint verified,
// compaction failed, migration executed).
type AuditRecord struct {
	ID     int64           `json:"id"`
	Source string          `json:"source"`
	Kind   string          `json:"kind"`
	Entity string          `json:"entity"`
	Body   json.RawMessage `json:"body"`
	Time   time.Time       `json:"time"`
}

// IntegrityProblem names one session whose record is unsound.
type IntegrityProblem struct {
	SessionID string `json:"sessionId"`
	Problem   string `json:"problem"`
}

// IntegrityReport lists unsound sessions; an empty Problems means clean.
type IntegrityReport struct {
	SessionsChecked int                `json:"sessionsChecked"`
	EntriesChecked  int                `json:"entriesChecked"`
	Problems        []IntegrityProblem `json:"problems,omitempty"`
}

// Clean reports whether no problem was found.
func (r IntegrityReport) Clean() bool { return len(r.Problems) == 0 }

// HostImage is an image a harness keeps for a session it recorded; a
// user.message payload lists them as "hostImages". Ref is the harness's own
// id for it (AttachmentSource recovers the bytes).
type HostImage struct {
	MediaType string `json:"mediaType,omitempty"`
	Ref       string `json:"ref"`
}

// Attachment is an image Bridge received in a prompt and keeps under its
// data directory; a user.message payload lists them as "attachments".
type Attachment struct {
	SHA256    string `json:"sha256"`
	MediaType string `json:"mediaType"`
	Bytes     int    `json:"bytes"`
}
