// Package peer is the client on the other end of a transport, as the
// service sees it: what the client must be told (Notifier), what it is
// asked (PermissionAsker), how long work reports progress to it
// (WithProgress) and the wire shape of an entry it is sent (WireEntry).
// The transports (rpc, rpc/acp) implement these and the service calls
// them; the transports own this interface, so neither imports the other's
// implementation. It holds plain types only: core and the contract's data
// types (schema).
package peer

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
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

// The notifications' params are the contract's types (schema), sent as
// they are.
type (
	// ContextCompacted tells the client a harness compacted its window
	// (session/contextCompacted).
	ContextCompacted = schema.ContextCompactedNotification
	// CheckpointSaved tells the client a Bridge checkpoint was committed
	// (session/checkpointSaved).
	CheckpointSaved = schema.CheckpointSavedNotification
	// Restored is the outcome of a resume (the session/resume result and
	// the session/restored notification).
	Restored = schema.RestoredNotification
)

// progressKey carries a progress reporter in a context.
type progressKey struct{}

// Progress reports work done out of total (total 0 when unknown) with a
// short message.
type Progress func(done, total int64, msg string)

// WithProgress returns ctx carrying p; long operations report through it
// (ProgressFrom).
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// ProgressFrom returns the reporter in ctx, or one that does nothing.
func ProgressFrom(ctx context.Context) Progress {
	if p, ok := ctx.Value(progressKey{}).(Progress); ok && p != nil {
		return p
	}
	return func(int64, int64, string) {}
}

// PermissionAsker asks the client's user whether a harness may run a tool
// (session/requestPermission). It returns the chosen option's id, or ""
// when the client answered "cancelled". An error (the client answered with
// one, or is gone, or ctx ended) leaves the decision to the preset's policy.
type PermissionAsker interface {
	RequestPermission(ctx context.Context, p PermissionRequest) (optionID string, err error)
}

// PermissionRequest is one session/requestPermission to the client.
type PermissionRequest struct {
	SessionID string
	Request   core.ApprovalRequest // Options filled
}

// WireEntry converts a record entry to its wire shape; an absent payload
// becomes {} (payloads are objects).
func WireEntry(e core.Entry) schema.Entry {
	payload := e.Payload
	if len(payload) == 0 {
		payload = emptyObject
	}
	return schema.Entry{ID: e.ID, SessionID: e.SessionID, ParentID: e.ParentID, Seq: e.Seq, Kind: string(e.Kind),
		Payload: payload, NativeID: e.NativeID, TokenEstimate: e.TokenEstimate, CreatedAt: e.CreatedAt}
}

var emptyObject = []byte(`{}`)
