package core

import "encoding/json"

// Compaction triggers.
const (
	TriggerManual  = "manual"
	TriggerAuto    = "auto"
	TriggerUnknown = "unknown"
)

// Causes of an automatic compaction, where the harness tells them apart.
const (
	// CausePressure: the window crossed the harness's threshold between
	// steps.
	CausePressure = "pressure"
	// CauseContextOverflow: the provider refused a request as too large for
	// its context, and the harness compacted to retry it.
	CauseContextOverflow = "context-overflow"
)

// Compacted is the normalised payload of a context.compacted entry: one per
// native "my window was compacted" report, whatever the harness.
type Compacted struct {
	Harness    string `json:"harness"`
	Trigger    string `json:"trigger"` // manual | auto | unknown
	PreTokens  *int64 `json:"preTokens,omitempty"`
	PostTokens *int64 `json:"postTokens,omitempty"`
	// ShadowedTokens counts the tokens of the span the compaction replaced
	// (not the window's size), where the harness reports it.
	ShadowedTokens *int64 `json:"shadowedTokens,omitempty"`
	// Cause says why an automatic compaction ran (CausePressure,
	// CauseContextOverflow), where the harness tells them apart.
	Cause        string          `json:"cause,omitempty"`
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
