package service

import (
	"context"
	"errors"
	"fmt"
	"unicode"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/rpc/service/live"
	"github.com/bridge-dev/bridge/rpc/service/queue"
	"github.com/bridge-dev/bridge/schema"
)

// The prompt queue (ARCHITECTURE.md, Queue and steer; the queues are
// rpc/service/queue's). A session/prompt sent while a turn runs waits in
// its session's queue and runs when the turns before it have ended, first
// come first served; it is recorded as a user.message when it runs, like
// any prompt. session/queue lists the waiting prompts, session/withdraw
// takes one back (its request is answered with stopReason "withdrawn"), and
// session/cancel withdraws them all when asked (clearQueue). With steer:
// true a prompt is delivered into the running turn instead, where the
// harness can take input mid-turn.

// QueueNotifier is a Notifier told of queue changes (session/queueChanged).
type QueueNotifier = peer.QueueNotifier

// queueChanged tells the client sessionID's queue is now items.
func (s *Service) queueChanged(sessionID string, items []schema.QueuedPrompt) {
	if n, ok := s.opts.Notifier.(QueueNotifier); ok {
		n.QueueChanged(sessionID, items)
	}
}

// queuedLive lends a live session to the queue.
type queuedLive struct {
	s *Service
	l *live.Session
}

func (x queuedLive) Gate() queue.Gate { return x.l.Turn }
func (x queuedLive) Current() bool    { return x.s.liveFor(x.l.ID) == x.l }

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

// promptQueued runs a session/prompt: at once when nothing runs, else after
// the turns before it (or, with steer, inside the running turn).
func (s *Service) promptQueued(ctx context.Context, p schema.SessionPromptParams, content []core.Content) (schema.SessionPromptResult, error) {
	if err := checkPromptID(p.PromptID); err != nil {
		return schema.SessionPromptResult{}, err
	}
	sess, err := s.sess.Promptable(ctx, p.SessionID, content)
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
	item, err := s.queues.Add(sess.ID, id, content, s.opts.Now().UTC())
	if err != nil {
		return schema.SessionPromptResult{}, err
	}
	got, err := s.queues.Await(ctx, item, func(ctx context.Context) (queue.Live, error) {
		l, err := s.sess.EnsureLive(ctx, sess)
		if err != nil {
			return nil, err
		}
		return queuedLive{s, l}, nil
	})
	out.Queued = item.Waited()
	if errors.Is(err, queue.ErrWithdrawn) {
		out.StopReason = schema.StopWithdrawn
		return out, nil
	}
	if err != nil {
		return out, err
	}
	if item.Waited() {
		peer.ProgressFrom(ctx)(0, 0, "running")
	}
	res, err := s.sess.PromptHeld(ctx, got.(queuedLive).l, content)
	s.queues.Done(item)
	out.StopReason = res.StopReason
	return out, err
}

// steer delivers content into the prompt turn running on sess, recording
// it as a user.message {steered: true} in order with the turn's events. It
// reports false (and no error) when no prompt turn runs: the prompt then
// runs as usual. A harness that cannot take input mid-turn is refused
// before anything changes.
func (s *Service) steer(ctx context.Context, sess core.Session, content []core.Content) (bool, error) {
	l := s.liveFor(sess.ID)
	if l == nil || !s.queues.Running(sess.ID) {
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
	payload, err := s.sess.UserPayload(ctx, content)
	if err != nil {
		return false, err
	}
	payload.Steered = true
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

// SessionQueue lists the prompts waiting for the running turn to end.
func (s *Service) SessionQueue(ctx context.Context, p schema.SessionQueueParams) (schema.SessionQueueResult, error) {
	if _, err := s.session(ctx, p.SessionID); err != nil {
		return schema.SessionQueueResult{}, err
	}
	return schema.SessionQueueResult{Items: s.queues.Items(p.SessionID)}, nil
}

// SessionWithdraw takes a queued prompt back before it runs.
func (s *Service) SessionWithdraw(ctx context.Context, p schema.SessionWithdrawParams) (schema.SessionWithdrawResult, error) {
	if p.PromptID == "" {
		return schema.SessionWithdrawResult{}, invalidField("promptId", "promptId is required")
	}
	if _, err := s.session(ctx, p.SessionID); err != nil {
		return schema.SessionWithdrawResult{}, err
	}
	if s.queues.Withdraw(p.SessionID, p.PromptID) == 0 {
		return schema.SessionWithdrawResult{}, core.NotFound("queued prompt", p.PromptID)
	}
	return schema.SessionWithdrawResult{}, nil
}
