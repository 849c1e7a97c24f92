package controller

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
	"github.com/bridge-dev/bridge/rpc/service/live"
)

// The checkpointer sees a live session through its own interface
// (checkpointer.Live); these lend it the live sessions and the client.

// CheckpointLives lends the checkpointer the running sessions of lives;
// sessions run the turns it asks for.
func CheckpointLives(lives Lives, sessions Sessions) checkpointer.Lives {
	return lent{lives: lives, sessions: sessions}
}

// lend is a live session as the checkpointer sees it.
func (c *Controller) lend(l *live.Session) checkpointer.Live {
	return lentLive{l: l, sessions: c.opts.Sessions}
}

type lent struct {
	lives    Lives
	sessions Sessions
}

func (x lent) Live(sessionID string) checkpointer.Live {
	if l := x.lives.Get(sessionID); l != nil {
		return lentLive{l: l, sessions: x.sessions}
	}
	return nil
}

// lentLive is a live session as the checkpointer sees it.
type lentLive struct {
	l        *live.Session
	sessions Sessions
}

func (x lentLive) Host() core.BridgeHost          { return x.l.Host }
func (x lentLive) Harness() core.Live             { return x.l.Harness }
func (x lentLive) Preset() core.Preset            { return x.l.Preset }
func (x lentLive) ApprovalPending() bool          { return x.l.ApprovalPending() }
func (x lentLive) TryHold() bool                  { return x.l.Turn.TryLock() }
func (x lentLive) Release()                       { x.l.Turn.Unlock() }
func (x lentLive) Hold(ctx context.Context) error { return x.l.Turn.LockContext(ctx) }
func (x lentLive) Gauge() *core.Gauge             { return x.l.Gauge() }
func (x lentLive) Commit(fn func() error) error   { return x.l.Commit(fn) }

func (x lentLive) Ask(ctx context.Context, prompt string) (string, error) {
	return x.sessions.Ask(ctx, x.l, prompt)
}

func (x lentLive) Append(ctx context.Context, es ...core.NewEntry) ([]core.Entry, error) {
	return x.l.AppendInOrder(ctx, es...)
}

// CheckpointNotifier tells the client what a checkpoint did: n's
// notifications, and announce for the entries a checkpoint committed.
func CheckpointNotifier(n peer.Notifier, announce func(es ...core.Entry)) checkpointer.Notifier {
	return notifier{Notifier: n, announce: announce}
}

type notifier struct {
	peer.Notifier
	announce func(es ...core.Entry)
}

func (n notifier) Announce(es ...core.Entry) { n.announce(es...) }
