// Package service is Bridge's orchestration: it ties the record (core.Store)
// to the harness adapters (core.BridgeHost), keeps live sessions, writes
// checkpoints, restores and migrates sessions, and tells the client what
// happened through a Notifier. The rpc package turns wire calls into calls
// on *Service; cmd/bridge wires it. It answers in the contract's data types
// (schema), so it lives beside rpc, not in core, which knows no contract.
package service

import (
	"context"

	"github.com/bridge-dev/bridge/core"
)

// Notifier receives what the client must be told. The rpc layer implements
// it with JSON-RPC notifications; calls must not block for long.
type Notifier interface {
	// EntryAppended: session/update.
	EntryAppended(e core.Entry)
	// ContextCompacted: session/contextCompacted.
	ContextCompacted(n ContextCompacted)
	// CheckpointSaved: session/checkpointSaved.
	CheckpointSaved(n CheckpointSaved)
	// Restored: session/restored.
	Restored(n Restored)
	// Log: window/logMessage (level 1 error, 2 warning, 3 info, 4 log).
	Log(level int, msg string)
}

// GaugeNotifier is a Notifier that is also told every context gauge
// reading of a live session (bridge acp sends it as usage_update). The
// service calls it when its Notifier implements it.
type GaugeNotifier interface {
	Gauge(sessionID string, g core.Gauge)
}

// ContextCompacted tells the client a harness compacted its window.
type ContextCompacted struct {
	SessionID  string
	EntryID    string
	Harness    string
	Trigger    string
	PreTokens  *int64
	PostTokens *int64
	Estimated  bool
}

// CheckpointSaved tells the client a Bridge checkpoint was committed. Hot is
// true when the provider's window did not shrink ("Checkpoint saved").
type CheckpointSaved struct {
	SessionID  string
	EntryID    string
	Reason     string
	Provenance string
	Method     string
	Hot        bool
}

// Restored is the outcome of a resume (the session/resume result and the
// session/restored notification).
type Restored struct {
	SessionID         string
	Mode              string
	Reason            string
	NativeError       string
	CheckpointEntryID string
}

// CompactOutcome is the result of session/compact.
type CompactOutcome struct {
	By           string // "harness" or "bridge"
	FocusApplied bool
	FocusNote    string
	EntryID      string
}

// CheckpointOutcome is the result of session/checkpoint.
type CheckpointOutcome struct {
	EntryID    string
	Provenance string
	Reason     string
	Method     string
	ForkUsage  *core.TokenUsage
}

// ImportOutcome is the result of session/import.
type ImportOutcome struct {
	SessionID        string
	Entries          int // entries added by this import
	ContextCompacted int // context.compacted entries in the imported session
}

// progressKey carries a progress reporter in a context.
type progressKey struct{}

// Progress reports work done out of total (total 0 when unknown) with a
// short message.
type Progress func(done, total int64, msg string)

// WithProgress returns ctx carrying p; long operations report through it.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// progressFrom returns the reporter in ctx, or one that does nothing.
func progressFrom(ctx context.Context) Progress {
	if p, ok := ctx.Value(progressKey{}).(Progress); ok && p != nil {
		return p
	}
	return func(int64, int64, string) {}
}
