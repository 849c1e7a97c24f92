package live

import (
	"context"
	"sync"
)

// muteState decides which of a live session's queued events are recorded
// without being announced: the backlog of a cancelled turn. A harness can
// report far faster than Bridge records and announces (a flood of entries);
// once the user cancels, what is still queued is recorded (nothing is lost)
// but not sent to the client as if it were happening now, and the cancel
// and the prompt are answered without waiting for it. Guarded by
// Session.qmu.
type muteState struct {
	queued int64 // events ever queued
	taken  int64 // events handed to the drainer
	// all mutes every event until the cancelled turn ends; below mutes
	// the events numbered below it (the cancelled turn's).
	all   bool
	below int64
	// cancelled is closed when the running turn is cancelled.
	cancelled chan struct{}
	// pending: a cancel arrived while a prompt held the session but its
	// turn had not begun (its user message was being recorded); the turn
	// begins cancelled.
	pending bool
	once    *sync.Once
}

// take numbers the next n events for the drainer; it returns the number
// of the first.
func (m *muteState) take(n int) int64 {
	first := m.taken
	m.taken += int64(n)
	return first
}

// quiet tells whether event number i (see muteState.take) is to be
// recorded without being announced. It is asked as each entry is about to
// be announced, so a cancel silences a batch already being recorded.
func (l *Session) quiet(i int64) bool {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	return l.mute.all || i < l.mute.below
}

// BeginTurn starts a turn that cancelTurn can end; it returns the channel
// closed on cancellation.
func (l *Session) BeginTurn() <-chan struct{} {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	l.mute.all = false
	l.mute.cancelled = make(chan struct{})
	l.mute.once = new(sync.Once)
	if l.mute.pending {
		l.mute.pending = false
		l.mute.all = true
		l.mute.once.Do(func() { close(l.mute.cancelled) })
	}
	return l.mute.cancelled
}

// CancelTurn marks the running turn cancelled: from now until the turn
// ends, what the harness reported is recorded quietly, and the prompt
// stops waiting for it.
func (l *Session) CancelTurn() {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	if l.mute.cancelled == nil {
		// No turn under way; if a prompt holds the session, its turn is
		// about to begin: it begins cancelled.
		if l.Turn.Held() {
			l.mute.pending = true
		}
		return
	}
	l.mute.all = true
	l.mute.once.Do(func() { close(l.mute.cancelled) })
}

// EndTurn ends the turn begun by beginTurn. After a cancel, every event
// queued by then stays quiet; later events are announced again.
func (l *Session) EndTurn() {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	if l.mute.all {
		l.mute.below = l.mute.queued
		l.mute.all = false
	}
	l.mute.cancelled = nil
	l.mute.once = nil
	l.mute.pending = false
}

// ClearPending forgets a cancel that arrived for a prompt that ended before
// its turn began.
func (l *Session) ClearPending() {
	l.qmu.Lock()
	l.mute.pending = false
	l.qmu.Unlock()
}

// FlushOrCancel waits until every queued event is recorded, the turn is
// cancelled or ctx ends; it tells whether the wait was cut short.
func (l *Session) FlushOrCancel(ctx context.Context, cancelled <-chan struct{}) bool {
	done := make(chan struct{})
	go func() {
		l.Flush()
		close(done)
	}()
	select {
	case <-done:
		return false
	case <-cancelled:
	case <-ctx.Done():
	}
	return true
}
