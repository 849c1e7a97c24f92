// Package service is Bridge's orchestration: it ties the record (core.Store)
// to the harness adapters (core.BridgeHost), keeps live sessions, writes
// checkpoints, restores and migrates sessions, and tells the client what
// happened through a Notifier. The rpc package turns wire calls into calls
// on *Service; cmd/bridge wires it. It answers in the contract's data types
// (schema), so it lives beside rpc, not in core, which knows no contract.
package service

import (
	"github.com/bridge-dev/bridge/rpc/peer"
)

// The client as the transports offer it (package peer): the service tells
// it through a Notifier, asks it through a PermissionAsker and reports
// progress through the context (peer.WithProgress).
type (
	Notifier          = peer.Notifier
	GaugeNotifier     = peer.GaugeNotifier
	ContextCompacted  = peer.ContextCompacted
	CheckpointSaved   = peer.CheckpointSaved
	Restored          = peer.Restored
	Progress          = peer.Progress
	PermissionAsker   = peer.PermissionAsker
	PermissionRequest = peer.PermissionRequest
)

// CompactOutcome is the result of session/compact.
type CompactOutcome struct {
	By           string // "harness" or "bridge"
	FocusApplied bool
	FocusNote    string
	EntryID      string
}
