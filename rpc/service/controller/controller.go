// Package controller is Bridge's checkpoint controller (ARCHITECTURE.md,
// Checkpoints): it raises checkpoints on its own at the moments that
// matter — after a turn that completed a plan step (phase_boundary), on a
// context gauge reading under pressure (context_pressure,
// response_reserve), before an idle or closed session's process is stopped
// (before_suspend, suspend.go), at shutdown (before_shutdown) and before a
// risky native resume (before_native_resume, resume.go) — and answers
// session/compact (the harness's own command, or a Bridge checkpoint,
// compact.go). Every checkpoint goes through the checkpointer's one entry
// point and its decision with the suppressions, like one a client asks
// for. Each of the controller's moments is a signal (a turn's end, a
// gauge reading, an idle clock's timer, Close), never a poll.
//
// The live sessions are rpc/service/live's; the controller reads and marks
// them (live/state.go) and reaches the service's flows and the
// checkpointer through its own small interfaces, Sessions and
// Checkpointer. It lends the checkpointer the live sessions (lend.go).
package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
	"github.com/bridge-dev/bridge/rpc/service/live"
)

// Defaults of the controller's options.
const (
	DefaultSuspendAfter       = 30 * time.Minute
	DefaultShutdownCheckpoint = 20 * time.Second
	DefaultRiskyResumeEntries = 200
)

// ShutdownGrace is how long shutdown waits, past the checkpoint limit, for
// cancelled checkpoints (and the controller's other work) to record their
// end.
const ShutdownGrace = 3 * time.Second

// Checkpointer writes checkpoints (rpc/service/checkpointer).
type Checkpointer interface {
	// Checkpoint is the one entry point: a checkpoint of a session for r.
	Checkpoint(ctx context.Context, sessionID string, r checkpointer.Request) (checkpointer.Outcome, error)
	// State is what the decision function needs to know besides the
	// record; fresh probes the host anew.
	State(ctx context.Context, sess core.Session, l checkpointer.Live, fresh bool) checkpoint.State
	// CheckNotPending refuses with busy while a checkpoint request is
	// pending on the session.
	CheckNotPending(ctx context.Context, sessionID string) error
}

// Hosts are the adapters and their probes (rpc/service/hosts).
type Hosts interface {
	Get(harness string) (core.BridgeHost, error)
	Capabilities(ctx context.Context, h core.BridgeHost) core.Probe
	Cached(h core.BridgeHost) (core.Probe, bool)
}

// Lives are the running sessions (a *live.Table).
type Lives interface {
	Get(sessionID string) *live.Session
	All() []*live.Session
}

// Sessions are the service's session flows the controller calls.
type Sessions interface {
	// EnsureLive returns the session's running harness, resumed when
	// needed.
	EnsureLive(ctx context.Context, sess core.Session) (*live.Session, error)
	// Ask runs one turn in l, whose turn the caller holds, and returns the
	// assistant text it produced.
	Ask(ctx context.Context, l *live.Session, prompt string) (string, error)
}

// Logger takes the log lines of the controller's work, which fails
// without failing a request.
type Logger interface {
	Log(level int, msg string)
}

// Options configures a Controller; every field without a default is
// required.
type Options struct {
	Store        core.Store
	Hosts        Hosts
	Lives        Lives
	Sessions     Sessions
	Checkpointer Checkpointer
	// Append appends entries to a session and tells the client of them.
	Append func(ctx context.Context, sessionID string, es ...core.NewEntry) ([]core.Entry, error)
	Log    Logger
	// Life ends when the service begins to stop its sessions; Go runs the
	// controller's background work in the group the service's Close waits
	// for.
	Life context.Context
	Go   func(func())
	// CheckpointTimeout bounds the wait for a checkpoint reply.
	CheckpointTimeout time.Duration
	// ResponseReserve is the number of tokens kept free for a response
	// (the response_reserve trigger); 0 disables it.
	ResponseReserve int64
	// SuspendAfter is how long a live session may stay idle (0:
	// DefaultSuspendAfter; negative: never).
	SuspendAfter time.Duration
	// ShutdownCheckpoint bounds the before_shutdown checkpoints in total
	// (0: DefaultShutdownCheckpoint); NoShutdownCheckpoint turns them off.
	ShutdownCheckpoint   time.Duration
	NoShutdownCheckpoint bool
	// RiskyResumeEntries: a native resume of a session whose last boundary
	// is more than this many entries behind its head is preceded by a
	// before_native_resume checkpoint (0: DefaultRiskyResumeEntries;
	// negative: never on this ground).
	RiskyResumeEntries int
}

// Controller raises the checkpoints Bridge writes on its own. It is safe
// for concurrent use.
type Controller struct {
	opts Options
}

// New returns a Controller over opts.
func New(opts Options) *Controller { return &Controller{opts: opts} }

// raise asks the checkpointer for a checkpoint for reason, waiting for a
// running turn to end first, and logs what happened: a suppression as a
// log line, a failure as a warning.
func (c *Controller) raise(ctx context.Context, sessionID string, reason checkpoint.Reason) (checkpointer.Outcome, error) {
	out, err := c.opts.Checkpointer.Checkpoint(ctx, sessionID, checkpointer.Request{Reason: reason, Wait: true})
	switch {
	case err == nil:
		c.opts.Log.Log(4, fmt.Sprintf("session %s: %s checkpoint %s (%s)", sessionID, reason, out.EntryID, out.Provenance))
	case checkpointer.Suppressed(err) != "":
		c.opts.Log.Log(4, fmt.Sprintf("session %s: %s suppressed (%s): %v", sessionID, reason, checkpointer.Suppressed(err), err))
	default:
		c.opts.Log.Log(2, fmt.Sprintf("session %s: %s checkpoint: %v", sessionID, reason, err))
	}
	return out, err
}

// background runs f in the service's background group with a context
// that ends with the service's life or after the longest a controller
// checkpoint may take.
func (c *Controller) background(f func(ctx context.Context)) {
	c.opts.Go(func() {
		ctx, cancel := context.WithTimeout(c.opts.Life, 2*c.opts.CheckpointTimeout+10*time.Second)
		defer cancel()
		f(ctx)
	})
}

// AfterTurn runs once a prompt's turn has ended and its lock is released:
// a turn that completed at least one plan step ends with a phase_boundary
// decision, in the background (the prompt's reply does not wait for it).
func (c *Controller) AfterTurn(l *live.Session, stepsCompleted int) {
	l.Touch()
	if stepsCompleted == 0 {
		return
	}
	l.BeginAuto()
	c.background(func(ctx context.Context) {
		defer l.EndAuto()
		_, _ = c.raise(ctx, l.ID, checkpoint.ReasonPhaseBoundary)
	})
}

// Gauge runs the controller on a context gauge reading, on the goroutine
// that records the session's events, so it decides from what it holds
// (the reading, the queued flag, the last capability probe) and reads
// nothing: where Bridge is the sole owner of the window (a gauge and no
// compaction of the harness's own), a reading at 75% (context_pressure)
// or into the response reserve queues one controller checkpoint, unless
// one is queued already. The queued worker waits for the turn to end and
// decides with the record (no new work, a tool in flight, a fresh probe
// that finds a compaction command: suppressed, logged).
func (c *Controller) Gauge(l *live.Session, g core.Gauge) {
	st := checkpoint.State{HasGauge: true, GaugeUsed: g.Used, GaugeSize: g.Size,
		ResponseReserve: c.opts.ResponseReserve, MeaningfulWork: true}
	if p, ok := c.opts.Hosts.Cached(l.Host); ok {
		st.OwnCompaction = p.Has(core.CapCompactCommand)
	}
	var reasons []checkpoint.Reason
	for _, r := range []checkpoint.Reason{checkpoint.ReasonContextPressure, checkpoint.ReasonResponseReserve} {
		if checkpoint.Decide(r, st).Fire {
			reasons = append(reasons, r)
		}
	}
	if len(reasons) == 0 {
		return
	}
	if !l.QueueController() {
		return // one is queued already
	}
	c.background(func(ctx context.Context) {
		defer l.ControllerDone()
		c.pressure(ctx, l, reasons)
	})
}

// pressure is the queued work of Gauge: with a fresh probe and the latest
// gauge, the first window reason that still fires gets a checkpoint (which
// waits for the running turn and decides with the record).
func (c *Controller) pressure(ctx context.Context, l *live.Session, reasons []checkpoint.Reason) {
	sess, err := c.opts.Store.GetSession(ctx, l.ID)
	if err != nil {
		return
	}
	st := c.opts.Checkpointer.State(ctx, sess, c.lend(l), true)
	st.MeaningfulWork = true
	for _, r := range reasons {
		if checkpoint.Decide(r, st).Fire {
			_, _ = c.raise(ctx, l.ID, r)
			return
		}
	}
}

// Shutdown gives every live session with meaningful work since its last
// boundary a before_shutdown checkpoint, all in parallel, within the
// configured total time. A session that does not finish in time is left
// as it is (its request is cancelled) and a log line says so.
func (c *Controller) Shutdown(ctx context.Context) {
	if c.opts.NoShutdownCheckpoint {
		return
	}
	limit := c.opts.ShutdownCheckpoint
	if limit <= 0 {
		limit = DefaultShutdownCheckpoint
	}
	lives := c.opts.Lives.All()
	if len(lives) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var wg sync.WaitGroup
	for _, l := range lives {
		if !l.Alive() {
			continue
		}
		wg.Add(1)
		go func(l *live.Session) {
			defer wg.Done()
			_, err := c.raise(ctx, l.ID, checkpoint.ReasonBeforeShutdown)
			if err != nil && ctx.Err() != nil {
				c.opts.Log.Log(2, fmt.Sprintf("session %s: the before_shutdown checkpoint did not finish within %s; the session is left as it is", l.ID, limit))
			}
		}(l)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit + ShutdownGrace):
		c.opts.Log.Log(2, fmt.Sprintf("before_shutdown checkpoints still running %s after the %s limit; shutting down", ShutdownGrace, limit))
	}
}

// session loads a session's head record.
func (c *Controller) session(ctx context.Context, id string) (core.Session, error) {
	if id == "" {
		return core.Session{}, core.InvalidField("sessionId", "sessionId is required")
	}
	return c.opts.Store.GetSession(ctx, id)
}
