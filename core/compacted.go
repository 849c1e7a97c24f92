package core

import "encoding/json"

// CompactionTrigger says who started a native compaction: manual (the user
// or Bridge asked), auto (the harness decided) or unknown (the harness does
// not say).
type CompactionTrigger string

// Compaction triggers.
const (
	TriggerManual  CompactionTrigger = "manual"
	TriggerAuto    CompactionTrigger = "auto"
	TriggerUnknown CompactionTrigger = "unknown"
)

// CompactionTriggers are the triggers, in the order above.
var CompactionTriggers = []CompactionTrigger{TriggerManual, TriggerAuto, TriggerUnknown}

// CompactionCause says why an automatic compaction ran, where the harness
// tells: pressure (its threshold was crossed between steps) or
// context-overflow (the provider refused a request as too large).
type CompactionCause string

// Causes of an automatic compaction, where the harness tells them apart.
const (
	// CausePressure: the window crossed the harness's threshold between
	// steps.
	CausePressure CompactionCause = "pressure"
	// CauseContextOverflow: the provider refused a request as too large for
	// its context, and the harness compacted to retry it.
	CauseContextOverflow CompactionCause = "context-overflow"
)

// CompactionCauses are the causes, in the order above.
var CompactionCauses = []CompactionCause{CausePressure, CauseContextOverflow}

// Compacted is the normalised payload of a context.compacted entry: one per
// native "my window was compacted" report, whatever the harness.
type Compacted struct {
	Harness string `json:"harness"`
	// Trigger says who started the compaction.
	Trigger    CompactionTrigger `json:"trigger"`
	PreTokens  *int64            `json:"preTokens,omitempty"`
	PostTokens *int64            `json:"postTokens,omitempty"`
	// ShadowedTokens counts the tokens of the span the compaction replaced
	// (not the window's size), where the harness reports it.
	ShadowedTokens *int64 `json:"shadowedTokens,omitempty"`
	// Cause says why an automatic compaction ran (CausePressure,
	// CauseContextOverflow), where the harness tells them apart.
	Cause        CompactionCause `json:"cause,omitempty"`
	Estimated    bool            `json:"estimated,omitempty"` // token counts derived, not reported
	NativeID     string          `json:"nativeId"`
	Summary      string          `json:"summary,omitempty"`
	Focus        string          `json:"focus,omitempty"`
	FocusApplied *bool           `json:"focusApplied,omitempty"`
	Raw          json.RawMessage `json:"raw,omitempty"` // the harness's own fields, whole
}

// Entry turns c into the context.compacted entry to append. The entry's
// NativeID is c.NativeID so that the same report is recorded once.
func (c Compacted) Entry() NewEntry {
	if c.Trigger == "" {
		c.Trigger = TriggerUnknown
	}
	return NewEntry{Kind: KindContextCompacted, Payload: Payload(c), NativeID: c.NativeID}
}
