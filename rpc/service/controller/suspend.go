package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
	"github.com/bridge-dev/bridge/rpc/service/live"
)

// Suspension is what a suspension did.
type Suspension struct {
	// Suspended is false when the session had no running process.
	Suspended bool
	// CheckpointEntryID is the before_suspend checkpoint, when one was
	// written.
	CheckpointEntryID string
	// Suppressed names the rule that stopped the checkpoint, when one did.
	Suppressed checkpoint.Suppression
}

// Suspend checkpoints a live session (before_suspend, when the decision
// allows) and stops its harness process; the record says status
// "suspended", and the next prompt or session/resume brings the session
// back. A session whose process is not running is left alone. A session
// running a turn is busy.
func (c *Controller) Suspend(ctx context.Context, sessionID string) (Suspension, error) {
	return c.suspend(ctx, sessionID, "client", false)
}

// suspend is Suspend; by says who asked ("client" or "idle"); wait waits
// for a running turn instead of refusing.
func (c *Controller) suspend(ctx context.Context, sessionID, by string, wait bool) (Suspension, error) {
	if _, err := c.session(ctx, sessionID); err != nil {
		return Suspension{}, err
	}
	l := c.opts.Lives.Get(sessionID)
	if l == nil {
		return Suspension{}, nil
	}
	var out Suspension
	turns := l.Turns()
	cp, err := c.opts.Checkpointer.Checkpoint(ctx, sessionID, checkpointer.Request{Reason: checkpoint.ReasonBeforeSuspend, Wait: wait})
	switch {
	case err == nil:
		out.CheckpointEntryID = cp.EntryID
	case checkpointer.Suppressed(err) == checkpoint.SuppressedToolInFlight || checkpointer.Suppressed(err) == checkpoint.SuppressedApproval:
		return Suspension{}, core.Errorf(core.CodeBusy, "session %s: %v", sessionID, err)
	case checkpointer.Suppressed(err) != "":
		out.Suppressed = checkpointer.Suppressed(err)
	case core.ErrorCode(err) == core.CodeBusy:
		return Suspension{}, err
	default:
		// The checkpoint failed (and says so in the record); suspend anyway:
		// the process is stopped either way, and a native resume or the
		// previous checkpoint brings the session back.
		c.opts.Log.Log(2, fmt.Sprintf("session %s: before_suspend checkpoint: %v", sessionID, err))
	}
	if err := l.LockTurn(ctx); err != nil {
		return Suspension{}, err
	}
	defer l.Turn.Unlock()
	if c.opts.Lives.Get(sessionID) != l {
		return out, nil // stopped meanwhile
	}
	promptedSince := l.Turns() != turns
	if promptedSince && by == "idle" {
		return Suspension{}, core.Errorf(core.CodeBusy, "session %s was prompted meanwhile; no longer idle", sessionID)
	}
	if err := l.Close(ctx); err != nil {
		c.opts.Log.Log(2, fmt.Sprintf("session %s: stopping the harness to suspend: %v", sessionID, err))
	}
	if _, err := c.opts.Append(context.WithoutCancel(ctx), sessionID, core.NewEntry{Kind: core.KindSessionStatus,
		Payload: core.Payload(core.StatusPayload{Status: "suspended", By: by})}); err != nil {
		return Suspension{}, core.E(core.CodePersistence, "record the suspension", err)
	}
	out.Suspended = true
	return out, nil
}

// suspendAfter is how long a live session may stay idle.
func (c *Controller) suspendAfter() time.Duration {
	if c.opts.SuspendAfter > 0 {
		return c.opts.SuspendAfter
	}
	return DefaultSuspendAfter
}

// StartIdleClock arms the idle suspension of a recorded live session: its
// clock fires once the session has been idle for Options.SuspendAfter
// (each turn's end restarts it).
func (c *Controller) StartIdleClock(l *live.Session) {
	if c.opts.SuspendAfter < 0 {
		return
	}
	l.StartIdleClock(c.suspendAfter(), func() { c.idle(l) })
}

// idle runs when a live session's idle clock fires: a session in a turn
// (or with a controller checkpoint under way) starts a new clock; an idle
// one is suspended, in the background group.
func (c *Controller) idle(l *live.Session) {
	if c.opts.Life.Err() != nil || c.opts.Lives.Get(l.ID) != l {
		return
	}
	if l.AutoRunning() || l.Turn.Held() {
		l.Touch()
		return
	}
	l.BeginAuto() // a prompt arriving now waits, then starts the process again
	c.background(func(ctx context.Context) {
		defer l.EndAuto()
		out, err := c.suspend(ctx, l.ID, "idle", true)
		switch {
		case err != nil && core.ErrorCode(err) == core.CodeBusy:
			l.Touch() // a turn began meanwhile; try again later
		case err != nil:
			c.opts.Log.Log(2, fmt.Sprintf("session %s: idle suspension: %v", l.ID, err))
		case out.Suspended:
			c.opts.Log.Log(3, fmt.Sprintf("session %s: suspended after %s idle", l.ID, c.suspendAfter()))
		}
	})
}
