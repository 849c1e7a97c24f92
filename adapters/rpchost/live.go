package rpchost

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// live is one session the client hosts. It implements core.Live and the
// optional core.Compactor, core.GoalHost and core.GoalClearer; each optional
// method refuses with core.ErrUnsupported unless the client advertised it.
type live struct {
	h        *Host
	nativeID string
	sink     core.EventSink

	qmu     sync.Mutex
	queue   []item // events waiting for the sink, in wire order
	running bool   // a worker goroutine is draining queue

	mu     sync.Mutex
	done   chan struct{}
	exit   core.ExitInfo
	ended  bool // done is closed
	closed bool // Bridge closed it
}

// item is one queued notification, or a barrier closed when every item
// before it has been handled.
type item struct {
	n       schema.HostEventNotification
	barrier chan struct{}
}

var (
	_ core.Live        = (*live)(nil)
	_ core.Compactor   = (*live)(nil)
	_ core.GoalHost    = (*live)(nil)
	_ core.GoalClearer = (*live)(nil)
)

func newLive(h *Host, nativeID string, sink core.EventSink) *live {
	return &live{h: h, nativeID: nativeID, sink: sink, done: make(chan struct{})}
}

// NativeID is the client's id of the session.
func (l *live) NativeID() string { return l.nativeID }

// Done is closed when the client reports the session's process ended, or
// Bridge closed it.
func (l *live) Done() <-chan struct{} { return l.done }

// Exit tells how the session ended; valid after Done is closed.
func (l *live) Exit() core.ExitInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.exit
}

// end closes Done once with x and stops routing events to l.
func (l *live) end(x core.ExitInfo) bool {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return false
	}
	l.ended = true
	l.exit = x
	close(l.done)
	l.mu.Unlock()
	l.h.unregister(l)
	return true
}

// usable refuses calls on a session that has ended.
func (l *live) usable(op string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return core.Errorf(core.CodeInvalid, "%s: session %s was closed", op, l.nativeID)
	case l.ended:
		msg := fmt.Sprintf("%s: session %s has ended on the hosting client (exit code %d", op, l.nativeID, l.exit.Code)
		if l.exit.Err != "" {
			msg += ": " + l.exit.Err
		}
		return core.Errorf(core.CodeUnavailable, "%s)", msg)
	}
	return nil
}

// enqueue queues it for the sink; a worker goroutine (one at a time per
// session) drains the queue, so the sink is never called concurrently and
// never on the caller's goroutine.
func (l *live) enqueue(it item) {
	l.qmu.Lock()
	l.queue = append(l.queue, it)
	start := !l.running
	l.running = true
	l.qmu.Unlock()
	if start {
		go l.drain()
	}
}

// drain handles queued items until the queue is empty.
func (l *live) drain() {
	for {
		l.qmu.Lock()
		if len(l.queue) == 0 {
			l.running = false
			l.qmu.Unlock()
			return
		}
		it := l.queue[0]
		l.queue[0] = item{}
		l.queue = l.queue[1:]
		l.qmu.Unlock()
		if it.barrier != nil {
			close(it.barrier)
			continue
		}
		l.deliver(it.n)
	}
}

// flush waits until every event queued so far has reached the sink, or ctx
// ends.
func (l *live) flush(ctx context.Context) error {
	b := make(chan struct{})
	l.enqueue(item{barrier: b})
	select {
	case <-b:
		return nil
	case <-ctx.Done():
		return core.E(core.CodeCancelled, "waiting for the session's events", errors.Join(core.ErrCancelled, ctx.Err()))
	}
}

// deliver hands one notification's events to the sink, in order.
func (l *live) deliver(n schema.HostEventNotification) {
	defer func() {
		if r := recover(); r != nil {
			l.h.log.Error("rpchost: the event sink panicked", "nativeId", l.nativeID, "panic", fmt.Sprint(r))
		}
	}()
	if n.Entry != nil {
		e := l.h.entry(l.nativeID, *n.Entry)
		l.sink(core.Event{Entry: &e})
	}
	if n.Gauge != nil {
		g := *n.Gauge
		l.sink(core.Event{Gauge: &g})
	}
	if n.Model != "" {
		l.sink(core.Event{Model: n.Model})
	}
	if n.Exit != nil {
		l.end(core.ExitInfo{Code: n.Exit.ExitCode, StderrTail: n.Exit.StderrTail, Err: n.Exit.Error})
	}
}

// untilDone returns a context that also ends when the session ends, so a
// call in flight is abandoned (and cancelled on the client) when the client
// reports the session's exit.
func (l *live) untilDone(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-l.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Prompt sends host/session.prompt and returns its stop reason. The turn's
// host/event notifications precede the reply on the wire, so they have
// reached the sink when Prompt returns (see the package doc).
func (l *live) Prompt(ctx context.Context, content []core.Content) (core.TurnResult, error) {
	if err := l.h.gate(core.CapSessionPrompt); err != nil {
		return core.TurnResult{}, err
	}
	if err := l.usable("session.prompt"); err != nil {
		return core.TurnResult{}, err
	}
	if len(content) == 0 {
		return core.TurnResult{}, core.Errorf(core.CodeInvalid, "session.prompt: content must hold at least one block")
	}
	for i, c := range content {
		switch c.Type {
		case schema.ContentText:
		case schema.ContentImage:
			if c.Data == "" || c.MediaType == "" {
				return core.TurnResult{}, core.Errorf(core.CodeInvalid, "session.prompt: content[%d]: an image needs mediaType and data", i)
			}
		default:
			return core.TurnResult{}, core.Errorf(core.CodeInvalid, "session.prompt: content[%d]: unknown type %q (want text or image)", i, c.Type)
		}
	}
	cctx, cancel := l.untilDone(ctx)
	defer cancel()
	var res schema.HostSessionPromptResult
	if err := l.h.rawCall(cctx, "host/"+core.CapSessionPrompt, schema.HostSessionPromptParams{NativeID: l.nativeID, Content: content}, &res); err != nil {
		if ctx.Err() == nil {
			if uerr := l.usable("session.prompt"); uerr != nil {
				return core.TurnResult{}, uerr
			}
		}
		return core.TurnResult{}, err
	}
	// The turn's events were queued before the reply was read.
	if err := l.flush(ctx); err != nil {
		return core.TurnResult{}, err
	}
	if res.StopReason == "" {
		res.StopReason = "end_turn"
	}
	return core.TurnResult{StopReason: res.StopReason}, nil
}

// Cancel sends host/session.cancel.
func (l *live) Cancel(ctx context.Context) error {
	if err := l.h.gate(core.CapSessionCancel); err != nil {
		return err
	}
	if err := l.usable("session.cancel"); err != nil {
		return err
	}
	return l.h.rawCall(ctx, "host/"+core.CapSessionCancel, schema.HostSessionParams{NativeID: l.nativeID}, nil)
}

// SelectModel sends host/session.selectModel.
func (l *live) SelectModel(ctx context.Context, model, effort string) error {
	if err := l.h.gate(core.CapSessionSelect); err != nil {
		return err
	}
	if err := l.usable("session.selectModel"); err != nil {
		return err
	}
	return l.h.rawCall(ctx, "host/"+core.CapSessionSelect,
		schema.HostSelectModelParams{NativeID: l.nativeID, Model: model, Effort: effort}, nil)
}

// Rename sends host/session.rename.
func (l *live) Rename(ctx context.Context, title string) error {
	if err := l.h.gate(core.CapSessionRename); err != nil {
		return err
	}
	if err := l.usable("session.rename"); err != nil {
		return err
	}
	return l.h.rawCall(ctx, "host/"+core.CapSessionRename, schema.HostSessionRenameParams{NativeID: l.nativeID, Title: title}, nil)
}

// Close sends host/session.close (a client that does not know it is
// fine: there is nothing to stop) and closes Done. Closing twice is a no-op.
func (l *live) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.closed || l.ended {
		l.closed = true
		l.mu.Unlock()
		l.end(core.ExitInfo{})
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	if ctx.Err() != nil {
		// Still tell the client, briefly: the session would leak otherwise.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
	}
	err := l.h.rawCall(ctx, "host/session.close", schema.HostSessionParams{NativeID: l.nativeID}, nil)
	l.end(core.ExitInfo{})
	if err != nil && core.ErrorCode(err) != core.CodeUnavailable {
		return err
	}
	return nil
}

// Compact sends host/compaction.command; the context.compacted entry follows
// as host/event. A focus the client did not apply always comes with a note.
func (l *live) Compact(ctx context.Context, focus string) (core.CompactResult, error) {
	if err := l.h.gate(core.CapCompactCommand); err != nil {
		return core.CompactResult{}, err
	}
	if err := l.usable("compaction.command"); err != nil {
		return core.CompactResult{}, err
	}
	var res schema.HostCompactResult
	if err := l.h.rawCall(ctx, "host/"+core.CapCompactCommand, schema.HostCompactParams{NativeID: l.nativeID, Focus: focus}, &res); err != nil {
		return core.CompactResult{}, err
	}
	// The context.compacted entry, when the client sent it before replying,
	// reaches the sink first.
	if err := l.flush(ctx); err != nil {
		return core.CompactResult{}, err
	}
	out := core.CompactResult{FocusApplied: res.FocusApplied, FocusNote: res.FocusNote}
	if focus == "" {
		out.FocusApplied = false
	}
	if focus != "" && !out.FocusApplied && out.FocusNote == "" {
		out.FocusNote = fmt.Sprintf("the hosting client (%s) did not apply the focus and gave no reason", l.h.harness)
	}
	return out, nil
}

// CreateGoal sends host/goal.create.
func (l *live) CreateGoal(ctx context.Context, g core.Goal) (string, error) {
	if err := l.h.gate(core.CapGoalCreate); err != nil {
		return "", err
	}
	if err := l.usable("goal.create"); err != nil {
		return "", err
	}
	var res schema.HostGoalCreateResult
	if err := l.h.rawCall(ctx, "host/"+core.CapGoalCreate, schema.HostGoalCreateParams{NativeID: l.nativeID, Text: g.Text, Rounds: g.Rounds}, &res); err != nil {
		return "", err
	}
	if res.GoalID == "" {
		return "", core.Errorf(core.CodeHarness, "host/goal.create: the hosting client answered no goalId")
	}
	return res.GoalID, nil
}

// PauseGoal sends host/goal.pause.
func (l *live) PauseGoal(ctx context.Context, goalID string) error {
	if err := l.h.gate(core.CapGoalPause); err != nil {
		return err
	}
	if err := l.usable("goal.pause"); err != nil {
		return err
	}
	return l.h.rawCall(ctx, "host/"+core.CapGoalPause, schema.HostGoalParams{NativeID: l.nativeID, GoalID: goalID}, nil)
}

// ClearGoal sends host/goal.clear.
func (l *live) ClearGoal(ctx context.Context, goalID string) error {
	if err := l.h.gate(core.CapGoalClear); err != nil {
		return err
	}
	if err := l.usable("goal.clear"); err != nil {
		return err
	}
	return l.h.rawCall(ctx, "host/"+core.CapGoalClear, schema.HostGoalParams{NativeID: l.nativeID, GoalID: goalID}, nil)
}
