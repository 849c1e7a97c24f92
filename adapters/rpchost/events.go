package rpchost

import (
	"context"
	"encoding/json"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// HostEvent receives one host/event notification (the backend's
// rpc.EventReceiver forwards its HostEvent here). It routes the event to the
// live session with that nativeId: an entry becomes Event{Entry} (an invalid
// one is kept as a harness.event entry carrying the client's payload), a
// gauge Event{Gauge}, a model Event{Model}, and an exit ends the session
// (Done closes, Exit tells how). Events for sessions Bridge does not drive
// are dropped with a log line; malformed params too. It never fails.
//
// HostEvent only queues: each session's events reach its sink in wire order
// on a goroutine of the session's own, never on the caller's. That matters
// because HostEvent is called on the connection's read loop, and a sink may
// call the client back (the service probes the host when a gauge arrives);
// doing so on the read loop would deadlock it. Call HostEvent synchronously
// from the read loop: then, since the client sends a turn's events before
// its host/session.prompt reply, they are queued before the reply is read,
// and Prompt waits for the queue to drain before it returns.
func (h *Host) HostEvent(ctx context.Context, params json.RawMessage) {
	var n schema.HostEventNotification
	if err := json.Unmarshal(params, &n); err != nil {
		h.log.WarnContext(ctx, "rpchost: host/event does not decode; dropped", "error", err, "params", clip(params))
		return
	}
	if n.NativeID == "" {
		h.log.WarnContext(ctx, "rpchost: host/event names no session (nativeId); dropped", "params", clip(params))
		return
	}
	h.mu.Lock()
	l := h.lives[n.NativeID]
	if l == nil {
		if h.creating > 0 && len(h.orphans) < maxOrphans {
			// A host/session.create reply may still name this session.
			h.orphans = append(h.orphans, orphan{nativeID: n.NativeID, n: n})
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		h.log.WarnContext(ctx, "rpchost: host/event for a session Bridge does not drive; dropped", "nativeId", n.NativeID)
		return
	}
	if n.Exit != nil {
		// Later events for this id are not this session's.
		delete(h.lives, n.NativeID)
	}
	l.enqueue(item{n: n})
	h.mu.Unlock()
}

// claim adds l to the routing table unless a live session with its id is
// already there.
func (h *Host) claim(l *live) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lives[l.nativeID] != nil {
		return false
	}
	h.lives[l.nativeID] = l
	return true
}

// register adds l, which comes from a host/session.create call that has now
// ended, to the routing table: events kept for its id are delivered first,
// before any later event can reach l. A previous live with the same id is
// replaced (the client reused an id).
func (h *Host) register(l *live) {
	h.mu.Lock()
	h.lives[l.nativeID] = l
	h.creating--
	var mine []orphan
	rest := h.orphans[:0]
	for _, o := range h.orphans {
		if o.nativeID == l.nativeID {
			mine = append(mine, o)
		} else {
			rest = append(rest, o)
		}
	}
	h.orphans = rest
	h.dropOrphansLocked()
	// Queue kept events before HostEvent can see l, so they go first.
	for _, o := range mine {
		l.enqueue(item{n: o.n})
	}
	h.mu.Unlock()
}

// dropOrphansLocked drops kept events once no create is in flight. h.mu is
// held.
func (h *Host) dropOrphansLocked() {
	if h.creating > 0 || len(h.orphans) == 0 {
		return
	}
	for _, o := range h.orphans {
		h.log.Warn("rpchost: host/event for a session Bridge does not drive; dropped", "nativeId", o.nativeID)
	}
	h.orphans = nil
}

// unregister removes l from the routing table (only if it is still l).
func (h *Host) unregister(l *live) {
	h.mu.Lock()
	if h.lives[l.nativeID] == l {
		delete(h.lives, l.nativeID)
	}
	h.mu.Unlock()
}

// entry maps a client's entry; one that does not validate is kept whole as
// a harness.event entry, never dropped and never fatal.
func (h *Host) entry(sessionID string, e schema.HostEntry) core.NewEntry {
	ne := core.NewEntry{Kind: core.Kind(e.Kind), Payload: append(json.RawMessage(nil), e.Payload...),
		NativeID: e.NativeID, TokenEstimate: e.TokenEstimate}
	err := ne.Validate()
	if err == nil {
		return ne
	}
	h.log.Warn("rpchost: the hosting client sent an invalid entry; kept as harness.event",
		"nativeId", sessionID, "kind", e.Kind, "error", err)
	raw, merr := json.Marshal(e)
	if merr != nil {
		raw = nil
	}
	p := core.HarnessEventPayload{Type: "rpchost.invalidEntry", Kind: e.Kind, Error: err.Error(), Harness: h.harness}
	if json.Valid(raw) {
		p.Raw = json.RawMessage(raw)
	}
	native := ""
	if e.NativeID != "" {
		native = "invalid:" + e.NativeID
	}
	return core.NewEntry{Kind: core.KindHarnessEvent, Payload: core.Payload(p), NativeID: native}
}

// clip shortens params for a log line.
func clip(b []byte) string {
	const max = 512
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
