// Package sessions is the flows of Bridge's sessions: create (session/create
// and a preset's resolution), prompt (queued behind a running turn or
// steered into it, the user message recorded, the turn run, a cancelled
// turn's answer), cancel, rename, archive, history, the
// session's status, resume (hot, native, checkpoint_restored or fresh, and
// why), and the model and effort of a live session (session/models,
// session/selectModel). The running harness sessions themselves are
// rpc/service/live's; this package decides when one starts (StartLive) and
// what runs in it. It reaches the rest of the service through small
// interfaces of its own: the leases (Leases), the session's git workspace
// (Workspace), the checkpoints (Checkpoints) and the checkpoint controller
// (Controller).
package sessions

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
	"github.com/bridge-dev/bridge/rpc/service/live"
)

// Hosts finds the adapters and what they can do (rpc/service/hosts).
type Hosts interface {
	// Get returns a harness's adapter, or an unavailable error.
	Get(harness string) (core.BridgeHost, error)
	// Lookup returns a harness's adapter, if configured.
	Lookup(harness string) (core.BridgeHost, bool)
	// Capabilities is h's probe (cached).
	Capabilities(ctx context.Context, h core.BridgeHost) core.Probe
	// Require refuses op when h lacks one of caps.
	Require(ctx context.Context, h core.BridgeHost, op string, caps ...string) error
}

// Leases are the leases of the sessions this process drives
// (rpc/service/lease).
type Leases interface {
	// Claim takes or renews sessionID's lease; a session another process
	// drives is refused (live_elsewhere).
	Claim(ctx context.Context, sessionID string) error
	// Release gives sessionID's lease back.
	Release(sessionID string)
}

// Workspace is a session's git workspace (rpc/service/workspace).
type Workspace interface {
	// Start finds the repository cwd is in and, when worktree, makes the
	// session's own worktree; it returns the working directory to use.
	Start(ctx context.Context, sessionID, cwd string, worktree bool) (core.SessionRepo, string, error)
	// Save records the session's repository.
	Save(ctx context.Context, r core.SessionRepo) error
	// Drop undoes Start for a session that was not created.
	Drop(ctx context.Context, r core.SessionRepo)
	// Archive removes an archived session's worktree.
	Archive(ctx context.Context, sessionID string) error
	// Gone refuses a prompt to a session whose worktree was removed.
	Gone(ctx context.Context, sessionID string) error
}

// Checkpoints are the checkpoints a flow asks for (rpc/service/checkpointer):
// before a downgrade, and the projection a restoration injects.
type Checkpoints interface {
	Checkpoint(ctx context.Context, sessionID string, r checkpointer.Request) (checkpointer.Outcome, error)
	Projection(ctx context.Context, sess core.Session, opt checkpoint.ProjectOptions) (checkpoint.Projection, error)
}

// Controller is the checkpoint controller as the flows tell it what
// happened (rpc/service/controller).
type Controller interface {
	// AfterTurn runs once a prompt's turn has ended and its lock is
	// released.
	AfterTurn(l *live.Session, stepsCompleted int)
	// StartIdleClock arms the idle suspension of a recorded live session.
	StartIdleClock(l *live.Session)
	// RecordHarnessVersion notes which version of the harness program runs
	// the session now.
	RecordHarnessVersion(ctx context.Context, h core.BridgeHost, sessionID string)
	// BeforeNativeResume writes a before_native_resume checkpoint when a
	// native resume of sess is risky, and returns the session as it is
	// then.
	BeforeNativeResume(ctx context.Context, h core.BridgeHost, sess core.Session) (core.Session, error)
}

// Notifier is the client as the flows tell it: log lines and how a session
// came back.
type Notifier interface {
	Log(level int, msg string)
	Restored(r peer.Restored)
}

// Images keeps the images prompts carry (rpc/service/attach).
type Images interface {
	Keep(ctx context.Context, c core.Content) (core.Attachment, error)
}

// Options configures Sessions; every member but Presets is required.
type Options struct {
	Store       core.Store
	Hosts       Hosts
	Lives       *live.Table
	Leases      Leases
	Workspace   Workspace
	Images      Images
	Queues      Queues
	Checkpoints Checkpoints
	Controller  Controller
	Notifier    Notifier
	// Announce tells the client about entries already committed.
	Announce func(es ...core.Entry)
	// Presets are the presets from the configuration file, in addition to
	// those each host lists.
	Presets []core.Preset
	// IDs makes session and prompt ids.
	IDs *core.IDs
	// Now is the clock (a queued prompt's time).
	Now core.Clock
}

// Sessions runs the session flows. It is safe for concurrent use.
type Sessions struct {
	opts Options
}

// New returns Sessions over opts.
func New(opts Options) *Sessions { return &Sessions{opts: opts} }

// Live returns the running harness session of sessionID, or nil.
func (s *Sessions) Live(sessionID string) *live.Session { return s.opts.Lives.Get(sessionID) }

// Session loads a session's head record.
func (s *Sessions) Session(ctx context.Context, id string) (core.Session, error) {
	if id == "" {
		return core.Session{}, core.InvalidField("sessionId", "sessionId is required")
	}
	return s.opts.Store.GetSession(ctx, id)
}

// Append appends to a session and tells the client about each entry.
func (s *Sessions) Append(ctx context.Context, sessionID string, es ...core.NewEntry) ([]core.Entry, error) {
	out, err := s.opts.Store.Append(ctx, sessionID, es...)
	if err != nil {
		return nil, err
	}
	s.opts.Announce(out...)
	return out, nil
}
