package live

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// What the service and the controller read and keep about a live session,
// each under the session's lock.

// Gauge is the newest context gauge reading (nil: none yet).
func (l *Session) Gauge() *core.Gauge {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gauge
}

// LastCompact is the id of the newest context.compacted entry recorded.
func (l *Session) LastCompact() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastCompact
}

// Capture starts keeping the assistant text the session records; stop
// ends it and returns the text.
func (l *Session) Capture() (stop func() string) {
	var buf strings.Builder
	l.mu.Lock()
	l.capture = &buf
	l.mu.Unlock()
	return func() string {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.capture = nil
		return buf.String()
	}
}

// BeginPrompt counts a prompt begun and restarts the count of plan steps
// it completes.
func (l *Session) BeginPrompt() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stepsCompleted = 0
	l.turns++
}

// StepsCompleted is how many plan steps the harness completed since the
// current prompt began.
func (l *Session) StepsCompleted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stepsCompleted
}

// Turns counts the prompts begun.
func (l *Session) Turns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.turns
}

// BeginAuto and EndAuto count a controller checkpoint or an idle
// suspension under way; a prompt arriving meanwhile waits for it.
func (l *Session) BeginAuto() { l.mu.Lock(); l.autoRunning++; l.mu.Unlock() }
func (l *Session) EndAuto()   { l.mu.Lock(); l.autoRunning--; l.mu.Unlock() }

// AutoRunning reports whether the controller holds the session.
func (l *Session) AutoRunning() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.autoRunning > 0
}

// QueueController marks a controller checkpoint queued; false when one is
// queued already. ControllerDone clears the mark.
func (l *Session) QueueController() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.controllerQueued {
		return false
	}
	l.controllerQueued = true
	return true
}

// ControllerDone clears the mark QueueController set.
func (l *Session) ControllerDone() {
	l.mu.Lock()
	l.controllerQueued = false
	l.mu.Unlock()
}

// StartIdleClock arms fn to run once the session has been idle for d
// (Touch restarts the clock); a clock already armed stays.
func (l *Session) StartIdleClock(d time.Duration, fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idleTimer != nil {
		return
	}
	l.idleAfter = d
	l.idleTimer = time.AfterFunc(d, fn)
}

// LockTurn takes the session's turn, waiting until it is released or ctx
// ends (then busy: the session is still running a turn).
func (l *Session) LockTurn(ctx context.Context) error {
	if err := l.Turn.LockContext(ctx); err != nil {
		return core.E(core.CodeBusy, fmt.Sprintf("session %s is still running a turn", l.ID), err)
	}
	return nil
}

// Touch restarts the idle clock.
func (l *Session) Touch() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idleTimer != nil {
		l.idleTimer.Reset(l.idleAfter)
	}
}

// ApprovalPending reports whether a tool approval is being decided.
func (l *Session) ApprovalPending() bool { return l.approvals.busy() }

// CancelApprovals ends every pending approval's wait: the turn was
// cancelled.
func (l *Session) CancelApprovals() { l.approvals.cancelAll(errTurnCancelled) }

// Commit records every event reported so far, then runs fn with no event
// recorded meanwhile (a checkpoint's commit, a steered message).
func (l *Session) Commit(fn func() error) error {
	l.Flush()
	l.order.Lock()
	defer l.order.Unlock()
	return fn()
}
