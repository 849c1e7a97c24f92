package core

import "encoding/json"

// Compaction triggers.
const (
	TriggerManual  = "manual"
	TriggerAuto    = "auto"
	TriggerUnknown = "unknown"
)

// Compacted is the normalised payload of a context.compacted entry: one per
// native "my window was compacted" report, whatever the harness.
type Compacted struct {
	Harness      string          `json:"harness"`
	Trigger      string          `json:"trigger"` // manual | auto | unknown
	PreTokens    *int64          `json:"preTokens,omitempty"`
	PostTokens   *int64          `json:"postTokens,omitempty"`
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
