package fake

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/bridge-dev/bridge/core"
)

// StderrTail is what a scripted crash leaves in Exit().StderrTail.
const StderrTail = "fake: crashed on request"

var (
	errCancelRequested = errors.New("fake: turn cancelled")
	errClosed          = errors.New("fake: session closed")
)

// Live is one running fake session (a core.Live with Compactor, GoalHost
// and GoalClearer).
type Live struct {
	h    *Host
	id   string
	gen  string // distinguishes entry ids of successive opens of one session
	sink core.EventSink
	req  core.CreateRequest // the preset and approver (ask)
	// discard: a fork's turn; nothing it does is stored.
	discard bool

	sinkMu sync.Mutex // one sink call at a time

	mu       sync.Mutex
	n        int64                   // entries emitted by this Live
	turn     context.CancelCauseFunc // non-nil while a turn runs
	turnDone chan struct{}
	used     int64
	pending  []core.NewEntry // entries of the running turn, stored at its end
	queue    []queued        // directives queued by the running turn
	dead     bool
	done     chan struct{}
	exit     core.ExitInfo
}

func (h *Host) open(id string, req core.CreateRequest, sink core.EventSink) *Live {
	return &Live{h: h, id: id, req: req, gen: randHex(3), sink: sink, done: make(chan struct{})}
}

// NativeID is the session id, known from the start.
func (l *Live) NativeID() string { return l.id }

// Done is closed when the session has crashed or been closed.
func (l *Live) Done() <-chan struct{} { return l.done }

// Exit tells how the session ended; valid after Done is closed.
func (l *Live) Exit() core.ExitInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.exit
}

func (l *Live) nextID() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return fmt.Sprintf("%s.%s.%d", l.id, l.gen, l.n)
}

// alive returns an error when the session has ended.
func (l *Live) alive() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadErr()
}

func (l *Live) deadErr() error {
	if !l.dead {
		return nil
	}
	return core.E(core.CodeHarness, fmt.Sprintf("fake: session %s has ended (exit code %d)", l.id, l.exit.Code), nil)
}

func (l *Live) send(ev core.Event) {
	if l.sink == nil {
		return
	}
	l.sinkMu.Lock()
	defer l.sinkMu.Unlock()
	l.sink(ev)
}

// emit sends an entry and keeps it for the store.
func (l *Live) emit(kind core.Kind, payload any) {
	l.emitEntry(core.NewEntry{Kind: kind, Payload: core.Payload(payload), NativeID: l.nextID()})
}

func (l *Live) emitEntry(e core.NewEntry) {
	l.mu.Lock()
	l.pending = append(l.pending, e)
	l.mu.Unlock()
	l.send(core.Event{Entry: &e})
}

func (l *Live) gauge() {
	if !l.h.has(core.CapContextGauge) {
		return
	}
	l.mu.Lock()
	g := core.Gauge{Used: l.used, Size: l.h.opts.Window}
	l.mu.Unlock()
	l.send(core.Event{Gauge: &g})
}

func tokens(s string) int64 { return int64(len(s)/4 + 1) }

// flush stores the pending entries, queued directives and usage.
func (l *Live) flush() error {
	if l.discard {
		return nil
	}
	l.mu.Lock()
	pending, queue, used := l.pending, l.queue, l.used
	l.pending, l.queue = nil, nil
	l.mu.Unlock()
	return l.h.update(l.id, func(r *record) error {
		r.Entries = append(r.Entries, pending...)
		r.Queue = append(r.Queue, queue...)
		r.Used = used
		return nil
	})
}

// die ends the session once.
func (l *Live) die(exit core.ExitInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead {
		return
	}
	l.dead, l.exit = true, exit
	close(l.done)
}

// Cancel ends the running turn with "cancelled"; with no turn it does
// nothing.
func (l *Live) Cancel(ctx context.Context) error {
	if err := l.h.refuse(core.CapSessionCancel); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.turn != nil {
		l.turn(errCancelRequested)
	}
	return nil
}

// Close ends the running turn, waits for it and ends the session (exit code
// 0). Closing twice is harmless.
func (l *Live) Close(ctx context.Context) error {
	l.mu.Lock()
	cancel, turnDone := l.turn, l.turnDone
	l.mu.Unlock()
	if cancel != nil {
		cancel(errClosed)
	}
	if turnDone != nil {
		select {
		case <-turnDone:
		case <-ctx.Done():
			return fmt.Errorf("fake: close: %w", ctx.Err())
		}
	}
	l.die(core.ExitInfo{Code: 0})
	return nil
}

// SelectModel switches model and/or effort ("" keeps the current one) and
// reports the model in use.
func (l *Live) SelectModel(ctx context.Context, model, effort string) error {
	if err := l.h.refuse(core.CapSessionSelect); err != nil {
		return err
	}
	if err := l.alive(); err != nil {
		return err
	}
	var now string
	err := l.h.update(l.id, func(r *record) error {
		if model != "" {
			if findModel(model) == nil {
				return core.Errorf(core.CodeInvalid, "fake: unknown model %q", model)
			}
			r.Model = model
		}
		if effort != "" {
			m := findModel(r.Model)
			if m == nil || !contains(m.Efforts, effort) {
				return core.Errorf(core.CodeInvalid, "fake: model %q has no effort %q", r.Model, effort)
			}
			r.Effort = effort
		}
		now = r.Model
		return nil
	})
	if err != nil {
		return err
	}
	l.send(core.Event{Model: now})
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Rename sets the stored session's title.
func (l *Live) Rename(ctx context.Context, title string) error {
	if err := l.h.refuse(core.CapSessionRename); err != nil {
		return err
	}
	if err := l.alive(); err != nil {
		return err
	}
	return l.h.update(l.id, func(r *record) error { r.Title = title; return nil })
}
