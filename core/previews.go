package core

import (
	"context"
	"encoding/json"
	"time"
)

// MigrationTarget names where a migration goes; empty fields keep the
// source's.
type MigrationTarget struct {
	// Harness is the target harness.
	Harness string `json:"harness,omitempty"`
	// Preset is the target preset.
	Preset string `json:"preset,omitempty"`
	// Model is the target model.
	Model string `json:"model,omitempty"`
	// Effort is the target reasoning effort.
	Effort string `json:"effort,omitempty"`
}

// Preview is a migration preview kept in the record: the handoff the
// summary worker wrote, where it goes, and whether it was executed. The
// user edits an export of the handoff (Path), read back on execute.
type Preview struct {
	ID              string
	SourceSessionID string
	Target          MigrationTarget
	// Lang is the handoff's language ("en" or "zh").
	Lang string
	// Path is the user-visible, editable export of Summary.
	Path string
	// Summary is the handoff as the worker wrote it.
	Summary string
	// Extra is the service's own state for the execution (a JSON object).
	Extra     json.RawMessage
	CreatedAt time.Time
	// ExecutedAt is when a process claimed the preview's execution; zero
	// until then.
	ExecutedAt time.Time
}

// PreviewStore keeps migration previews. ClaimPreview is one conditional
// update: however many processes call it for one preview at the same
// moment, exactly one succeeds.
type PreviewStore interface {
	// SavePreview inserts a preview (ExecutedAt must be zero).
	SavePreview(ctx context.Context, p Preview) error
	// GetPreview returns a preview, or an error wrapping ErrNotFound.
	GetPreview(ctx context.Context, id string) (Preview, error)
	// ClaimPreview marks an unexecuted preview executed at at. A preview
	// already executed is a CodeConflict error; a missing one wraps
	// ErrNotFound.
	ClaimPreview(ctx context.Context, id string, at time.Time) error
	// ReleasePreview makes a claimed preview executable again (the
	// execution failed before it created anything).
	ReleasePreview(ctx context.Context, id string) error
}

// AttachmentStore keeps the images received in prompts, by content.
type AttachmentStore interface {
	// PutAttachment stores data under a.SHA256; storing the same content
	// again changes nothing.
	PutAttachment(ctx context.Context, a Attachment, data []byte) error
	// GetAttachment returns an attachment's description and bytes, or an
	// error wrapping ErrNotFound.
	GetAttachment(ctx context.Context, sha256 string) (Attachment, []byte, error)
}
