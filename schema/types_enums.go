package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
)

// RequestID is a JSON-RPC request id: a number or a string.
type RequestID struct {
	// Num is the id when it is a number.
	Num int64
	// Str is the id when it is a string.
	Str string
	// IsString tells which of Num and Str holds the id.
	IsString bool
}

// NumberID returns the numeric request id n.
func NumberID(n int64) RequestID { return RequestID{Num: n} }

// StringID returns the string request id s.
func StringID(s string) RequestID { return RequestID{Str: s, IsString: true} }

// String returns the id as text (a number in decimal).
func (id RequestID) String() string {
	if id.IsString {
		return id.Str
	}
	return strconv.FormatInt(id.Num, 10)
}

// MarshalJSON writes the id as a JSON number or string.
func (id RequestID) MarshalJSON() ([]byte, error) {
	return marshalIntOrString(id.Num, id.Str, id.IsString)
}

// UnmarshalJSON reads a JSON number (an integer) or string.
func (id *RequestID) UnmarshalJSON(b []byte) error {
	n, s, isStr, err := unmarshalIntOrString(b, "request id")
	if err != nil {
		return err
	}
	*id = RequestID{Num: n, Str: s, IsString: isStr}
	return nil
}

// ProgressToken names one stream of $/progress notifications: a number or a
// string.
type ProgressToken struct {
	// Num is the token when it is a number.
	Num int64
	// Str is the token when it is a string.
	Str string
	// IsString tells which of Num and Str holds the token.
	IsString bool
}

// NumberToken returns the numeric progress token n.
func NumberToken(n int64) ProgressToken { return ProgressToken{Num: n} }

// StringToken returns the string progress token s.
func StringToken(s string) ProgressToken { return ProgressToken{Str: s, IsString: true} }

// String returns the token as text (a number in decimal).
func (t ProgressToken) String() string {
	if t.IsString {
		return t.Str
	}
	return strconv.FormatInt(t.Num, 10)
}

// MarshalJSON writes the token as a JSON number or string.
func (t ProgressToken) MarshalJSON() ([]byte, error) {
	return marshalIntOrString(t.Num, t.Str, t.IsString)
}

// UnmarshalJSON reads a JSON number (an integer) or string.
func (t *ProgressToken) UnmarshalJSON(b []byte) error {
	n, s, isStr, err := unmarshalIntOrString(b, "progress token")
	if err != nil {
		return err
	}
	*t = ProgressToken{Num: n, Str: s, IsString: isStr}
	return nil
}

func marshalIntOrString(n int64, s string, isStr bool) ([]byte, error) {
	if isStr {
		return json.Marshal(s)
	}
	return []byte(strconv.FormatInt(n, 10)), nil
}

func unmarshalIntOrString(b []byte, what string) (int64, string, bool, error) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return 0, "", false, fmt.Errorf("schema: %s: %w", what, err)
		}
		return 0, s, true, nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, "", false, fmt.Errorf("schema: %s must be an integer or a string, got %.40s", what, b)
	}
	return n, "", false, nil
}

// MessageType is the severity of window/showMessage and window/logMessage:
// 1 error, 2 warning, 3 info, 4 log.
type MessageType int

// Message severities, as LSP numbers them.
const (
	MessageError   MessageType = 1
	MessageWarning MessageType = 2
	MessageInfo    MessageType = 3
	MessageLog     MessageType = 4
)

// CompactionTrigger says who started a native compaction: manual (the user
// or Bridge asked), auto (the harness decided) or unknown (the harness does
// not say).
type CompactionTrigger = core.CompactionTrigger

// Compaction triggers: core's.
const (
	TriggerManual  = core.TriggerManual
	TriggerAuto    = core.TriggerAuto
	TriggerUnknown = core.TriggerUnknown
)

// RestoreMode is how a session came back: hot (the adapter process was
// still running), native (the harness resumed its own stored thread and
// proved it), checkpoint_restored (a fresh process was given the latest
// checkpoint and the entries after it) or fresh (no prior context).
type RestoreMode = core.RestoreMode

// Restoration modes: core's.
const (
	ModeHot                = core.ModeHot
	ModeNative             = core.ModeNative
	ModeCheckpointRestored = core.ModeCheckpointRestored
	ModeFresh              = core.ModeFresh
)

// SessionStatus is where a session stands as the service answering knows
// it: live (its harness process runs in this service), suspended (Bridge
// stopped the process to save resources; the next prompt or session/resume
// brings it back), ended (the process exited) or idle (no process here and
// nothing recorded about its end: never started here, or imported). A
// session live in another Bridge process shows what that process last
// recorded.
type SessionStatus string

// Session statuses.
const (
	StatusLive      SessionStatus = "live"
	StatusSuspended SessionStatus = "suspended"
	StatusEnded     SessionStatus = "ended"
	StatusIdle      SessionStatus = "idle"
)

// ResumeRequestMode is what a client may ask of session/resume: "fresh"
// starts over deliberately; omitted means the best mode available.
type ResumeRequestMode string

// ResumeFresh asks for a fresh start.
const ResumeFresh ResumeRequestMode = "fresh"

// CompactedBy says who handled session/compact: the harness's own
// compaction command, or a Bridge checkpoint as the fallback.
type CompactedBy string

// Compaction handlers.
const (
	CompactedByHarness CompactedBy = "harness"
	CompactedByBridge  CompactedBy = "bridge"
)

// Provenance says where a checkpoint's content came from: agent (the
// session's own reply), agent+controller (the reply plus evidence Bridge
// appended) or reconstructed (built from the record after the process died).
type Provenance = checkpoint.Provenance

// Checkpoint provenances: core/checkpoint's.
const (
	ProvenanceAgent         = checkpoint.ProvenanceAgent
	ProvenanceController    = checkpoint.ProvenanceAgentController
	ProvenanceReconstructed = checkpoint.ProvenanceReconstructed
)

// CheckpointMethod says how a checkpoint was obtained: fork (asked of a
// native fork of the live session, then discarded: the live conversation is
// untouched), in-thread (asked in the live conversation, because the preset
// says so) or reconstructed (rebuilt from the record without the model).
type CheckpointMethod = core.CheckpointMethod

// Checkpoint methods: core's.
const (
	MethodFork          = core.CheckpointFork
	MethodInThread      = core.CheckpointInThread
	MethodReconstructed = core.CheckpointReconstructed
)

// CompactionCause says why an automatic compaction ran, where the harness
// tells: pressure (its threshold was crossed between steps) or
// context-overflow (the provider refused a request as too large).
type CompactionCause = core.CompactionCause

// DecidedBy says who decided an approval: user (the client's user
// answered), policy (the preset's policy, where no client could be asked)
// or timeout (the client did not answer in time; the policy applied).
type DecidedBy = core.DecidedBy

// TokenUsage is what a model call cost in tokens, as the harness reports it.
type TokenUsage = core.TokenUsage

// CheckpointReason is why a Bridge checkpoint was written.
type CheckpointReason = checkpoint.Reason // one list: checkpoint.Reasons

// CheckpointSuppression names the rule that stopped a checkpoint
// (no_new_work, tool_in_flight, approval_pending…): core/checkpoint's.
type CheckpointSuppression = checkpoint.Suppression

// InjectMode says how a migration hands the handoff to the target: as a
// goal, as a kickoff prompt, or both.
type InjectMode string

// Injection modes.
const (
	InjectGoal   InjectMode = "goal"
	InjectPrompt InjectMode = "prompt"
	InjectBoth   InjectMode = "both"
)
