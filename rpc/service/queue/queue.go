// Package queue holds the sessions' prompt queues (ARCHITECTURE.md, Queue
// and steer): a session/prompt sent while a turn runs waits in its
// session's queue and runs when the turns before it have ended, first come
// first served. Only the first waiting prompt waits for the session's turn
// (a send on its turn gate takes it); the others wait for the queue to
// change. session/withdraw takes a prompt back. The live session is seen
// only through the package's own Live and Gate; the client hears of
// changes through Notify.
package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// Gate is a live session's one turn at a time (live.TurnGate).
type Gate interface {
	TryLock() bool
	// C takes the turn when a send on it succeeds.
	C() chan<- struct{}
	Unlock()
}

// Live is the live session a queued prompt runs on.
type Live interface {
	// Gate is the session's turn.
	Gate() Gate
	// Current reports whether this is still the session's live session
	// (it did not stop meanwhile).
	Current() bool
}

// Notify tells the client sessionID's queue is now items.
type Notify func(sessionID string, items []schema.QueuedPrompt)

// ErrWithdrawn ends the wait of a withdrawn prompt.
var ErrWithdrawn = errors.New("the prompt was withdrawn from the queue")

// Queues holds every session's prompt queue. It is safe for concurrent
// use.
type Queues struct {
	notify Notify
	mu     sync.Mutex
	m      map[string]*line // by session id; dropped when empty and idle
}

// New returns empty Queues telling notify of changes.
func New(notify Notify) *Queues { return &Queues{notify: notify, m: map[string]*line{}} }

// line is one session's queue. Guarded by Queues.mu.
type line struct {
	waiting []*Prompt
	// running counts the queue's prompts whose turn runs (0 or 1): a steer
	// goes into such a turn, never into a checkpoint's.
	running int
	// changed is closed, and replaced, whenever waiting changes.
	changed chan struct{}
}

// Prompt is one prompt in a queue.
type Prompt struct {
	sessionID string
	q         *line
	id        string
	content   []core.Content
	at        time.Time
	waited    bool          // it had to wait (so the client was told)
	withdrawn chan struct{} // closed by Withdraw
}

// Waited reports whether the prompt had to wait (the client was told).
func (p *Prompt) Waited() bool { return p.waited }

// queueOf returns sessionID's queue, made on first use; the caller holds
// qs.mu.
func (qs *Queues) queueOf(sessionID string) *line {
	q := qs.m[sessionID]
	if q == nil {
		q = &line{changed: make(chan struct{})}
		qs.m[sessionID] = q
	}
	return q
}

// dropIdle forgets sessionID's queue when nothing waits or runs; the
// caller holds qs.mu.
func (qs *Queues) dropIdle(sessionID string, q *line) {
	if len(q.waiting) == 0 && q.running == 0 && qs.m[sessionID] == q {
		delete(qs.m, sessionID)
	}
}

// remove takes p out of the waiting list; the caller holds Queues.mu.
func (q *line) remove(p *Prompt) bool {
	for i, x := range q.waiting {
		if x == p {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			close(q.changed)
			q.changed = make(chan struct{})
			return true
		}
	}
	return false
}

// items is the waiting list in its wire shape; the caller holds
// Queues.mu.
func (q *line) items() []schema.QueuedPrompt {
	out := make([]schema.QueuedPrompt, 0, len(q.waiting))
	for _, p := range q.waiting {
		var text []string
		images := 0
		for _, c := range p.content {
			if c.Type == "image" {
				images++
			} else {
				text = append(text, c.Text)
			}
		}
		out = append(out, schema.QueuedPrompt{PromptID: p.id, Text: strings.Join(text, "\n"), Images: images, QueuedAt: p.at})
	}
	return out
}

// Add puts a prompt at the end of sessionID's queue; an id already
// waiting there is refused.
func (qs *Queues) Add(sessionID, id string, content []core.Content, at time.Time) (*Prompt, error) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	q := qs.queueOf(sessionID)
	for _, x := range q.waiting {
		if x.id == id {
			return nil, core.InvalidField("promptId", "a prompt %s is already queued on session %s", core.Quote(id), sessionID)
		}
	}
	p := &Prompt{sessionID: sessionID, q: q, id: id, content: content, at: at, withdrawn: make(chan struct{})}
	q.waiting = append(q.waiting, p)
	return p, nil
}

// Done ends the turn of p, which Await gave the turn.
func (qs *Queues) Done(p *Prompt) {
	qs.mu.Lock()
	p.q.running--
	qs.dropIdle(p.sessionID, p.q)
	qs.mu.Unlock()
}

// Running reports whether a queued prompt's turn runs on sessionID.
func (qs *Queues) Running(sessionID string) bool {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	return qs.m[sessionID] != nil && qs.m[sessionID].running > 0
}

// Items lists the prompts waiting on sessionID.
func (qs *Queues) Items(sessionID string) []schema.QueuedPrompt {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if q := qs.m[sessionID]; q != nil {
		return q.items()
	}
	return []schema.QueuedPrompt{}
}

// Withdraw takes back the prompts queued on sessionID that match (all of
// them when promptID is ""): each leaves the queue at once and its Await
// returns ErrWithdrawn. It reports how many it took.
func (qs *Queues) Withdraw(sessionID, promptID string) int {
	qs.mu.Lock()
	q := qs.m[sessionID]
	if q == nil {
		qs.mu.Unlock()
		return 0
	}
	var took []*Prompt
	for _, p := range q.waiting {
		if promptID == "" || p.id == promptID {
			took = append(took, p)
		}
	}
	for _, p := range took {
		q.remove(p)
		close(p.withdrawn)
	}
	items := q.items()
	qs.mu.Unlock()
	if len(took) > 0 {
		qs.notify(sessionID, items)
	}
	return len(took)
}

// Await waits until item is the first of its queue and the session's
// turn is free, and returns the live session (open brings it up) with the
// turn held and item out of the queue (counted as running: call Done). It
// returns ErrWithdrawn when the prompt was withdrawn, and an error when
// ctx ended or the session could not be brought back; either way item has
// left the queue.
func (qs *Queues) Await(ctx context.Context, item *Prompt, open func(context.Context) (Live, error)) (Live, error) {
	q := item.q
	for {
		qs.mu.Lock()
		first := len(q.waiting) > 0 && q.waiting[0] == item
		ahead := len(q.waiting)
		for i, x := range q.waiting {
			if x == item {
				ahead = i
			}
		}
		changed := q.changed
		qs.mu.Unlock()
		select {
		case <-item.withdrawn:
			return qs.leave(item, ErrWithdrawn)
		default:
		}
		// First in the queue, the prompt waits for the turn's release
		// itself (a send on the gate takes it); behind others, for the
		// queue to change.
		var take chan<- struct{}
		var l Live
		if first {
			var err error
			if l, err = open(ctx); err != nil {
				return qs.leave(item, err)
			}
			if l.Gate().TryLock() {
				if got, done, err := qs.tookTurn(item, l); done {
					return got, err
				}
				continue
			}
			take = l.Gate().C()
		}
		if !item.waited {
			item.waited = true
			qs.mu.Lock()
			items := q.items()
			qs.mu.Unlock()
			qs.notify(item.sessionID, items)
		}
		peer.ProgressFrom(ctx)(0, 0, fmt.Sprintf("queued: waiting for the running turn (%d prompts ahead)", ahead))
		select {
		case <-item.withdrawn:
			return qs.leave(item, ErrWithdrawn)
		case <-ctx.Done():
			return qs.leave(item, core.E(core.CodeCancelled, "the queued prompt was cancelled before it ran", errors.Join(core.ErrCancelled, ctx.Err())))
		case <-changed:
		case take <- struct{}{}: // never ready when take is nil
			if got, done, err := qs.tookTurn(item, l); done {
				return got, err
			}
		}
	}
}

// leave takes item out of its queue after its wait failed with err.
func (qs *Queues) leave(item *Prompt, err error) (Live, error) {
	q := item.q
	qs.mu.Lock()
	removed := q.remove(item)
	items := q.items()
	qs.dropIdle(item.sessionID, q)
	qs.mu.Unlock()
	if removed && item.waited {
		qs.notify(item.sessionID, items)
	}
	return nil, err
}

// tookTurn goes on once item, first in its queue, has taken l's turn: it
// takes item out of the queue (counted as running) and returns l, or
// leaves with ErrWithdrawn when item was withdrawn meanwhile. done is
// false when the session stopped meanwhile: the turn is given back, and
// the caller brings the session back and tries again.
func (qs *Queues) tookTurn(item *Prompt, l Live) (got Live, done bool, err error) {
	if !l.Current() {
		l.Gate().Unlock() // stopped meanwhile: bring it back
		return nil, false, nil
	}
	q := item.q
	qs.mu.Lock()
	select {
	case <-item.withdrawn:
		qs.mu.Unlock()
		l.Gate().Unlock()
		got, err = qs.leave(item, ErrWithdrawn)
		return got, true, err
	default:
	}
	q.remove(item)
	q.running++
	items := q.items()
	qs.mu.Unlock()
	if item.waited {
		qs.notify(item.sessionID, items)
	}
	return l, true, nil
}
