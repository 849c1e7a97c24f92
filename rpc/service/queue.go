package service

import (
	"context"
	"errors"
	"fmt"
	"github.com/bridge-dev/bridge/rpc/service/live"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// The prompt queue (ARCHITECTURE.md, Queue and steer). A session/prompt
// sent while a turn runs waits in its session's queue and runs when the
// turns before it have ended, first come first served; it is recorded as a
// user.message when it runs, like any prompt. session/queue lists the
// waiting prompts, session/withdraw takes one back (its request is answered
// with stopReason "withdrawn"), and session/cancel withdraws them all when
// asked (clearQueue). With steer: true a prompt is delivered into the
// running turn instead, where the harness can take input mid-turn.

// QueueNotifier is a Notifier told of queue changes (session/queueChanged).
type QueueNotifier = peer.QueueNotifier

// queues holds every session's prompt queue.
type queues struct {
	mu sync.Mutex
	m  map[string]*promptQueue // by session id; dropped when empty and idle
}

// promptQueue is one session's queue. Guarded by queues.mu.
type promptQueue struct {
	waiting []*queuedPrompt
	// running counts the queue's prompts whose turn runs (0 or 1): a steer
	// goes into such a turn, never into a checkpoint's.
	running int
	// changed is closed, and replaced, whenever waiting changes.
	changed chan struct{}
}

// queuedPrompt is one prompt in a queue.
type queuedPrompt struct {
	id        string
	content   []core.Content
	at        time.Time
	waited    bool          // it had to wait (so the client was told)
	withdrawn chan struct{} // closed by session/withdraw
}

// queueOf returns sessionID's queue, made on first use; the caller holds
// s.queues.mu.
func (s *Service) queueOf(sessionID string) *promptQueue {
	if s.queues.m == nil {
		s.queues.m = map[string]*promptQueue{}
	}
	q := s.queues.m[sessionID]
	if q == nil {
		q = &promptQueue{changed: make(chan struct{})}
		s.queues.m[sessionID] = q
	}
	return q
}

// dropIdle forgets sessionID's queue when nothing waits or runs; the
// caller holds s.queues.mu.
func (s *Service) dropIdle(sessionID string, q *promptQueue) {
	if len(q.waiting) == 0 && q.running == 0 && s.queues.m[sessionID] == q {
		delete(s.queues.m, sessionID)
	}
}

// remove takes p out of the waiting list; the caller holds s.queues.mu.
func (q *promptQueue) remove(p *queuedPrompt) bool {
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
// s.queues.mu.
func (q *promptQueue) items() []schema.QueuedPrompt {
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

// queueChanged tells the client sessionID's queue is now items.
func (s *Service) queueChanged(sessionID string, items []schema.QueuedPrompt) {
	if n, ok := s.opts.Notifier.(QueueNotifier); ok {
		n.QueueChanged(sessionID, items)
	}
}

// checkPromptID refuses a client's prompt id that is too long or holds
// control characters (it is shown in lists and logs).
func checkPromptID(id string) error {
	if len(id) > 128 {
		return invalidField("promptId", "promptId is %d bytes long; at most 128", len(id))
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return invalidField("promptId", "promptId must not hold control characters")
		}
	}
	return nil
}

// errWithdrawn ends the wait of a withdrawn prompt.
var errWithdrawn = errors.New("the prompt was withdrawn from the queue")

// promptQueued runs a session/prompt: at once when nothing runs, else after
// the turns before it (or, with steer, inside the running turn).
func (s *Service) promptQueued(ctx context.Context, p schema.SessionPromptParams, content []core.Content) (schema.SessionPromptResult, error) {
	if err := checkPromptID(p.PromptID); err != nil {
		return schema.SessionPromptResult{}, err
	}
	sess, err := s.promptable(ctx, p.SessionID, content)
	if err != nil {
		return schema.SessionPromptResult{}, err
	}
	if err := s.ws.Gone(ctx, sess.ID); err != nil {
		return schema.SessionPromptResult{}, err
	}
	id := p.PromptID
	if id == "" {
		id = s.opts.IDs.New("q_")
	}
	out := schema.SessionPromptResult{PromptID: id}
	if p.Steer {
		done, err := s.steer(ctx, sess, content)
		if done || err != nil {
			out.StopReason = schema.StopSteered
			return out, err
		}
	}
	item := &queuedPrompt{id: id, content: content, at: s.opts.Now().UTC(), withdrawn: make(chan struct{})}
	s.queues.mu.Lock()
	q := s.queueOf(sess.ID)
	for _, x := range q.waiting {
		if x.id == id {
			s.queues.mu.Unlock()
			return schema.SessionPromptResult{}, invalidField("promptId", "a prompt %s is already queued on session %s", core.Quote(id), sess.ID)
		}
	}
	q.waiting = append(q.waiting, item)
	s.queues.mu.Unlock()

	l, err := s.awaitTurn(ctx, sess, q, item)
	out.Queued = item.waited
	if errors.Is(err, errWithdrawn) {
		out.StopReason = schema.StopWithdrawn
		return out, nil
	}
	if err != nil {
		return out, err
	}
	if item.waited {
		peer.ProgressFrom(ctx)(0, 0, "running")
	}
	res, err := s.promptHeld(ctx, l, content)
	s.queues.mu.Lock()
	q.running--
	s.dropIdle(sess.ID, q)
	s.queues.mu.Unlock()
	out.StopReason = res.StopReason
	return out, err
}

// awaitTurn waits until item is the first of its queue and the session's
// turn is free, and returns the live session with the turn held and item
// out of the queue (counted as running). It returns errWithdrawn when the
// prompt was withdrawn, and an error when ctx ended or the session could
// not be brought back; either way item has left the queue.
func (s *Service) awaitTurn(ctx context.Context, sess core.Session, q *promptQueue, item *queuedPrompt) (*live.Session, error) {
	leave := func(err error) (*live.Session, error) {
		s.queues.mu.Lock()
		removed := q.remove(item)
		items := q.items()
		s.dropIdle(sess.ID, q)
		s.queues.mu.Unlock()
		if removed && item.waited {
			s.queueChanged(sess.ID, items)
		}
		return nil, err
	}
	for {
		s.queues.mu.Lock()
		first := len(q.waiting) > 0 && q.waiting[0] == item
		ahead := len(q.waiting)
		for i, x := range q.waiting {
			if x == item {
				ahead = i
			}
		}
		changed := q.changed
		s.queues.mu.Unlock()
		select {
		case <-item.withdrawn:
			return leave(errWithdrawn)
		default:
		}
		// First in the queue, the prompt waits for the turn's release
		// itself (a send on the gate takes it); behind others, for the
		// queue to change.
		var take chan<- struct{}
		var l *live.Session
		if first {
			var err error
			if l, err = s.ensureLive(ctx, sess); err != nil {
				return leave(err)
			}
			if l.Turn.TryLock() {
				if got, done, err := s.tookTurn(sess.ID, q, item, l, leave); done {
					return got, err
				}
				continue
			}
			take = l.Turn.C()
		}
		if !item.waited {
			item.waited = true
			s.queues.mu.Lock()
			items := q.items()
			s.queues.mu.Unlock()
			s.queueChanged(sess.ID, items)
		}
		peer.ProgressFrom(ctx)(0, 0, fmt.Sprintf("queued: waiting for the running turn (%d prompts ahead)", ahead))
		select {
		case <-item.withdrawn:
			return leave(errWithdrawn)
		case <-ctx.Done():
			return leave(core.E(core.CodeCancelled, "the queued prompt was cancelled before it ran", errors.Join(core.ErrCancelled, ctx.Err())))
		case <-changed:
		case take <- struct{}{}: // never ready when take is nil
			if got, done, err := s.tookTurn(sess.ID, q, item, l, leave); done {
				return got, err
			}
		}
	}
}

// tookTurn goes on once item, first in q, has taken l's turn: it takes
// item out of the queue (counted as running) and returns l, or leaves
// with errWithdrawn when item was withdrawn meanwhile. done is false when
// the session stopped meanwhile: the turn is given back, and the caller
// brings the session back and tries again.
func (s *Service) tookTurn(sessionID string, q *promptQueue, item *queuedPrompt, l *live.Session,
	leave func(error) (*live.Session, error)) (got *live.Session, done bool, err error) {
	if s.liveFor(sessionID) != l {
		l.Turn.Unlock() // stopped meanwhile: bring it back
		return nil, false, nil
	}
	s.queues.mu.Lock()
	select {
	case <-item.withdrawn:
		s.queues.mu.Unlock()
		l.Turn.Unlock()
		got, err = leave(errWithdrawn)
		return got, true, err
	default:
	}
	q.remove(item)
	q.running++
	items := q.items()
	s.queues.mu.Unlock()
	if item.waited {
		s.queueChanged(sessionID, items)
	}
	return l, true, nil
}

// steer delivers content into the prompt turn running on sess, recording
// it as a user.message {steered: true} in order with the turn's events. It
// reports false (and no error) when no prompt turn runs: the prompt then
// runs as usual. A harness that cannot take input mid-turn is refused
// before anything changes.
func (s *Service) steer(ctx context.Context, sess core.Session, content []core.Content) (bool, error) {
	l := s.liveFor(sess.ID)
	s.queues.mu.Lock()
	running := s.queues.m[sess.ID] != nil && s.queues.m[sess.ID].running > 0
	s.queues.mu.Unlock()
	if l == nil || !running {
		return false, nil
	}
	if err := s.hosts.Require(ctx, l.Host, "session/prompt with steer", core.CapPromptSteer); err != nil {
		return false, err
	}
	st, ok := l.Harness.(core.Steerer)
	if !ok {
		e := core.Errorf(core.CodeUnavailable, "session/prompt with steer: the %s adapter does not implement it", l.Host.Harness())
		e.Missing = []string{core.CapPromptSteer}
		return false, e
	}
	payload, err := s.userPayload(ctx, content)
	if err != nil {
		return false, err
	}
	payload["steered"] = true
	// The message is recorded in order with the harness's events: after
	// every event reported so far and before any it reports in answer.
	delivered := false
	err = l.Commit(func() error {
		if err := st.Steer(ctx, content); err != nil {
			if core.ErrorCode(err) == core.CodeInvalid && ctx.Err() == nil {
				return nil // the turn ended meanwhile: run it as a turn of its own
			}
			return wrapHarness(l.Host.Harness(), err)
		}
		delivered = true
		if _, err := s.appendEntries(context.WithoutCancel(ctx), sess.ID, core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(payload)}); err != nil {
			return fmt.Errorf("the prompt was delivered, recording it failed: %w", err)
		}
		return nil
	})
	return delivered, err
}

// withdraw takes back the prompts queued on sessionID that match (all of
// them when promptID is ""): each leaves the queue at once and its request
// is answered "withdrawn". It reports how many it took.
func (s *Service) withdraw(sessionID, promptID string) int {
	s.queues.mu.Lock()
	q := s.queues.m[sessionID]
	if q == nil {
		s.queues.mu.Unlock()
		return 0
	}
	var took []*queuedPrompt
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
	s.queues.mu.Unlock()
	if len(took) > 0 {
		s.queueChanged(sessionID, items)
	}
	return len(took)
}

// SessionQueue lists the prompts waiting for the running turn to end.
func (s *Service) SessionQueue(ctx context.Context, p schema.SessionQueueParams) (schema.SessionQueueResult, error) {
	if _, err := s.session(ctx, p.SessionID); err != nil {
		return schema.SessionQueueResult{}, err
	}
	s.queues.mu.Lock()
	defer s.queues.mu.Unlock()
	if q := s.queues.m[p.SessionID]; q != nil {
		return schema.SessionQueueResult{Items: q.items()}, nil
	}
	return schema.SessionQueueResult{Items: []schema.QueuedPrompt{}}, nil
}

// SessionWithdraw takes a queued prompt back before it runs.
func (s *Service) SessionWithdraw(ctx context.Context, p schema.SessionWithdrawParams) (schema.SessionWithdrawResult, error) {
	if p.PromptID == "" {
		return schema.SessionWithdrawResult{}, invalidField("promptId", "promptId is required")
	}
	if _, err := s.session(ctx, p.SessionID); err != nil {
		return schema.SessionWithdrawResult{}, err
	}
	if s.withdraw(p.SessionID, p.PromptID) == 0 {
		return schema.SessionWithdrawResult{}, core.NotFound("queued prompt", p.PromptID)
	}
	return schema.SessionWithdrawResult{}, nil
}
