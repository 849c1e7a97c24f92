// Package live keeps the running harness sessions (ARCHITECTURE.md, Flow
// of a turn): each session's events recorded in order as the harness
// reports them (a queue drained in batches), its one turn at a time (a
// gate taken with a context, never polled), a cancelled turn's backlog
// recorded without being announced, its tool approvals (the client asked,
// or the preset's policy), and what the controller needs to know of it
// (gauge, plan steps, idle clock). The service decides when a session
// starts, prompts and stops; it tells the service what happened through
// Env.
package live

import (
	"context"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
)

// Env is what every live session shares: where its events go and whom it
// tells.
type Env struct {
	Store core.Store
	// Prices price usage a harness reports without a cost (the usage
	// ledger).
	Prices map[string]core.Price
	// Notifier is told of failures on the side (Log) and of gauge
	// readings (when it is a peer.GaugeNotifier).
	Notifier peer.Notifier
	// Permissions asks the client about tool approvals (nil: the preset's
	// policy answers); ApprovalTimeout bounds the wait (0: 5 minutes).
	Permissions     peer.PermissionAsker
	ApprovalTimeout time.Duration
	// Announce tells the client about entries already committed.
	Announce func(es ...core.Entry)
	// Gauge runs the checkpoint controller on a gauge reading, on the
	// goroutine that records the session's events.
	Gauge func(l *Session, g core.Gauge)
	// Recorded runs once a session's row exists and its events flow (the
	// idle clock starts there).
	Recorded func(l *Session)
	// Stopped runs once a session's harness has stopped, by Close or on
	// its own (its lease is released there).
	Stopped func(l *Session)
}

// Table is the live sessions by Bridge session id. It is safe for
// concurrent use.
type Table struct {
	env *Env

	mu sync.Mutex
	m  map[string]*Session
}

// NewTable returns an empty table whose sessions share env.
func NewTable(env Env) *Table {
	return &Table{env: &env, m: map[string]*Session{}}
}

// New returns a Session for sessionID of harness h, not yet in the table
// (Put adds it once its harness runs); recorded says whether its session
// row exists yet.
func (t *Table) New(sessionID string, h core.BridgeHost, preset core.Preset, recorded bool) *Session {
	l := &Session{env: t.env, table: t, ID: sessionID, Host: h, Preset: preset, recorded: recorded, Turn: NewTurnGate()}
	l.idle = sync.NewCond(&l.qmu)
	return l
}

// Put registers l, whose harness runs, as sessionID's live session; one it
// replaces is closed.
func (t *Table) Put(l *Session) {
	t.mu.Lock()
	old := t.m[l.ID]
	if old != nil {
		old.closing = true
	}
	t.m[l.ID] = l
	t.mu.Unlock()
	if old != nil {
		go old.Harness.Close(context.Background())
	}
}

// Get returns the running session of sessionID, or nil.
func (t *Table) Get(sessionID string) *Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.m[sessionID]
	if l != nil && !l.Alive() {
		return nil
	}
	return l
}

// All lists the sessions in the table (running or just ended).
func (t *Table) All() []*Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*Session, 0, len(t.m))
	for _, l := range t.m {
		out = append(out, l)
	}
	return out
}

// remove takes l out of the table (if it is still there); closing marks it
// closed by Bridge. It returns whether Bridge had closed it.
func (t *Table) remove(l *Session, closing bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if closing {
		l.closing = true
	}
	if t.m[l.ID] == l {
		delete(t.m, l.ID)
	}
	return l.closing
}
