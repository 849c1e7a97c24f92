// Package service is Bridge's orchestration: it implements schema.Backend
// (every client request) over the record (core.Store) and the harness
// adapters (core.BridgeHost), and tells the client what happened through a
// Notifier. It is a thin adapter in the style of gopls's handlers: each
// request method checks and unpacks its params and calls the part that
// does the work — rpc/service/sessions (the session flows: create,
// prompt, queue and steer, cancel, archive, resume, models), live (the
// running harness sessions), checkpointer (checkpoints), migrate
// (migration), controller (the checkpoints Bridge raises on its own,
// suspension, compact), library (import, discovery, export, search, fork), hosts
// (the adapters and their probes), attach (kept images), lease, queue,
// workspace — keeping here only the wiring that lends the parts to each
// other. The rpc package turns wire calls
// into calls on *Service; cmd/bridge wires it. It answers in the
// contract's data types (schema), so it lives beside rpc, not in core,
// which knows no contract.
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
