package schema

// SessionUpdateNotification tells the client a new entry was recorded
// (session/update).
type SessionUpdateNotification struct {
	// SessionID is the session.
	SessionID string `json:"sessionId"`
	// Entry is the new entry.
	Entry Entry `json:"entry"`
}

// ContextCompactedNotification tells the client the harness compacted its
// own window (session/contextCompacted); the "Context compacted" card is
// drawn from this alone.
type ContextCompactedNotification struct {
	// SessionID is the session.
	SessionID string `json:"sessionId"`
	// EntryID is the context.compacted entry.
	EntryID string `json:"entryId"`
	// Harness is the harness that compacted.
	Harness string `json:"harness"`
	// Trigger says who started the compaction.
	Trigger CompactionTrigger `json:"trigger"`
	// PreTokens is the window's size in tokens before, when known.
	PreTokens *int64 `json:"preTokens,omitempty"`
	// PostTokens is the window's size in tokens after, when known.
	PostTokens *int64 `json:"postTokens,omitempty"`
	// Estimated is true when the token counts were derived, not reported.
	Estimated bool `json:"estimated,omitempty"`
	// ShadowedTokens counts the tokens of the span the compaction replaced
	// (not the window's size), where the harness reports it.
	ShadowedTokens *int64 `json:"shadowedTokens,omitempty"`
	// Cause says why an automatic compaction ran, where the harness tells:
	// pressure (its threshold was crossed between steps) or
	// context-overflow (the provider refused a request as too large).
	Cause CompactionCause `json:"cause,omitempty"`
}

// CheckpointSavedNotification tells the client a Bridge checkpoint was
// committed (session/checkpointSaved).
type CheckpointSavedNotification struct {
	// SessionID is the session.
	SessionID string `json:"sessionId"`
	// EntryID is the checkpoint entry.
	EntryID string `json:"entryId"`
	// Reason is why it was written.
	Reason CheckpointReason `json:"reason"`
	// Provenance says where its content came from.
	Provenance Provenance `json:"provenance"`
	// Method is how it was obtained.
	Method CheckpointMethod `json:"method"`
	// Hot is true when the provider's window did not shrink: show
	// "Checkpoint saved", never "Context compacted".
	Hot bool `json:"hot"`
}

// RestoredNotification tells the client how a session came back
// (session/restored).
type RestoredNotification struct {
	// SessionID is the session.
	SessionID string `json:"sessionId"`
	// Mode is how the session came back.
	Mode RestoreMode `json:"mode"`
	// Reason says why this mode.
	Reason string `json:"reason,omitempty"`
	// NativeError is the harness's own error text of a failed native resume.
	NativeError string `json:"nativeError,omitempty"`
	// CheckpointEntryID is the checkpoint injected (checkpoint_restored).
	CheckpointEntryID string `json:"checkpointEntryId,omitempty"`
}
