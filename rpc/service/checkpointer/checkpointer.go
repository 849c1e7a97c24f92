// Package checkpointer writes Bridge's checkpoints (ARCHITECTURE.md,
// Checkpoints): it decides whether one may be written now, asks the
// session's own agent (in a fork of it, or in the live thread) for the
// summary, or reconstructs one from the record and the repository when no
// harness runs, verifies it against the record and commits it with its
// boundary in one transaction. It reads a session through its window
// summary and newest entries (window.go), and answers restoration's and
// forks' projections the same way. The live sessions are the service's:
// it sees them through Live.
package checkpointer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/rpc/service/hosts"
)

// Live is a running session as a checkpoint sees it.
type Live interface {
	// Host is the session's adapter; Harness its running harness session.
	Host() core.BridgeHost
	Harness() core.Live
	// Preset is the preset the session runs (its checkpoint method).
	Preset() core.Preset
	// Gauge is the newest context gauge reading (nil: none).
	Gauge() *core.Gauge
	// ApprovalPending says a tool approval is being asked now.
	ApprovalPending() bool
	// TryHold takes the session's turn if it is free; Hold waits for it
	// until ctx ends; Release gives it back.
	TryHold() bool
	Hold(ctx context.Context) error
	Release()
	// Ask runs one turn, the caller holding the turn, and returns the
	// assistant text it produced.
	Ask(ctx context.Context, prompt string) (string, error)
	// Append appends entries in order with the harness's own events.
	Append(ctx context.Context, es ...core.NewEntry) ([]core.Entry, error)
	// Commit records every event reported so far, then runs fn with no
	// event recorded meanwhile.
	Commit(fn func() error) error
}

// Lives finds the running session of a session id (nil: none runs).
type Lives interface {
	Live(sessionID string) Live
}

// Notifier tells the client what a checkpoint did.
type Notifier interface {
	// Announce sends session/update for entries already committed.
	Announce(es ...core.Entry)
	CheckpointSaved(peer.CheckpointSaved)
	Log(level int, msg string)
}

// Options configures a Checkpointer; Store, Hosts, Lives, Notifier and IDs
// are required.
type Options struct {
	Store    core.Store
	Hosts    *hosts.Table
	Lives    Lives
	Notifier Notifier
	IDs      *core.IDs
	// Timeout bounds the wait for a checkpoint reply.
	Timeout time.Duration
	// Instructions are added to every checkpoint request.
	Instructions string
	// RepoStatus returns `git status --porcelain` for a working directory,
	// used by reconstructed checkpoints. Nil means no repository evidence.
	RepoStatus func(ctx context.Context, cwd string) (string, error)
	// ResponseReserve is the number of tokens kept free for a response
	// (the response_reserve trigger); 0 disables it.
	ResponseReserve int64
	// StartedAt is when this process began: a checkpoint request opened
	// before it and never closed is stale, not pending.
	StartedAt time.Time
}

// Checkpointer writes checkpoints, one at a time per session. It is safe
// for concurrent use.
type Checkpointer struct {
	opts Options

	mu      sync.Mutex
	writing map[string]chan struct{} // by session: closed when its checkpoint ends
}

// New returns a Checkpointer over opts.
func New(opts Options) *Checkpointer {
	return &Checkpointer{opts: opts, writing: map[string]chan struct{}{}}
}

// Request is what a checkpoint is asked for.
type Request struct {
	Reason checkpoint.Reason
	// Focus is added to the request the agent answers.
	Focus string
	// Wait waits (until ctx ends) for a checkpoint under way and for a
	// running turn, instead of refusing with busy: the controller's way.
	Wait bool
}

// Outcome is what a written checkpoint is.
type Outcome struct {
	EntryID    string
	Provenance checkpoint.Provenance
	Reason     string
	Method     core.CheckpointMethod
	ForkUsage  *core.TokenUsage
}

// DirectChatPreset is the preset name of a direct chat, which never
// auto-compacts.
const DirectChatPreset = "direct"

// Suppressed reports the suppression rule named by a refused checkpoint's
// error ("" when err is not a suppression).
func Suppressed(err error) checkpoint.Suppression {
	var e *checkpoint.SuppressedError
	if errors.As(err, &e) {
		return e.Rule
	}
	return ""
}

// begin marks sessionID's checkpoint as being written. One under way is
// waited for with wait (its end is a signal, then this one decides
// afresh: it may have saved the work already), else refused with busy.
func (c *Checkpointer) begin(ctx context.Context, sessionID string, wait bool) (end func(), err error) {
	for {
		c.mu.Lock()
		done, busy := c.writing[sessionID]
		if !busy {
			mine := make(chan struct{})
			c.writing[sessionID] = mine
			c.mu.Unlock()
			return func() {
				c.mu.Lock()
				delete(c.writing, sessionID)
				c.mu.Unlock()
				close(mine)
			}, nil
		}
		c.mu.Unlock()
		if !wait {
			return nil, core.Errorf(core.CodeBusy, "a checkpoint of session %s is already being written", sessionID)
		}
		select {
		case <-ctx.Done():
			return nil, core.E(core.CodeBusy, fmt.Sprintf("a checkpoint of session %s is still being written", sessionID), ctx.Err())
		case <-done:
		}
	}
}

// Writing reports whether a checkpoint of sessionID is being written by
// this process.
func (c *Checkpointer) Writing(sessionID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.writing[sessionID]
	return ok
}

// CheckNotPending refuses with busy while a checkpoint request opened by
// this process is pending on the session (a native compaction must not race
// a Bridge checkpoint).
func (c *Checkpointer) CheckNotPending(ctx context.Context, sessionID string) error {
	if c.Writing(sessionID) {
		return core.Errorf(core.CodeBusy, "a checkpoint of session %s is being written", sessionID)
	}
	win, err := c.opts.Store.Window(ctx, sessionID)
	if err != nil {
		return err
	}
	return checkpoint.PendingOf(win, c.opts.StartedAt).Err()
}

// State is what the decision function needs to know about a session
// besides its record: the gauge, who owns the window, direct chat. A gauge
// reading is its own proof that the harness reports one. fresh probes the
// host anew (capabilities some adapters learn while a session runs, such
// as a compaction command); otherwise a recent probe serves.
func (c *Checkpointer) State(ctx context.Context, sess core.Session, l Live, fresh bool) checkpoint.State {
	st := checkpoint.State{ResponseReserve: c.opts.ResponseReserve, DirectChat: sess.Preset == DirectChatPreset}
	if l == nil {
		return st
	}
	p := c.opts.Hosts.Capabilities(ctx, l.Host())
	if fresh {
		p = hosts.Probe(ctx, l.Host())
	}
	st.OwnCompaction = p.Has(core.CapCompactCommand)
	if g := l.Gauge(); g != nil {
		st.HasGauge = true
		st.GaugeUsed, st.GaugeSize = g.Used, g.Size
	}
	return st
}

// session loads a session's head record.
func (c *Checkpointer) session(ctx context.Context, id string) (core.Session, error) {
	if id == "" {
		return core.Session{}, core.InvalidField("sessionId", "sessionId is required")
	}
	return c.opts.Store.GetSession(ctx, id)
}
