package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"
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
// any prompt. With steer: true a prompt is delivered into the running turn
// instead, where the harness can take input mid-turn.

// Queues are the prompt queues (rpc/service/queue).
type Queues interface {
	// Add queues a prompt (a duplicate id is refused).
	Add(sessionID, id string, content []core.Content, at time.Time) (*queue.Prompt, error)
	// Await waits for item's turn, opening the live session with open.
	Await(ctx context.Context, item *queue.Prompt, open func(context.Context) (queue.Live, error)) (queue.Live, error)
	// Done ends item's turn.
	Done(item *queue.Prompt)
	// Running says whether a queued prompt's turn runs on sessionID.
	Running(sessionID string) bool
}

// queuedLive lends a live session to the queue.
type queuedLive struct {
	s *Sessions
	l *live.Session
}

func (x queuedLive) Gate() queue.Gate { return x.l.Turn }
func (x queuedLive) Current() bool    { return x.s.Live(x.l.ID) == x.l }

// checkPromptID refuses a client's prompt id that is too long or holds
// control characters (it is shown in lists and logs).
func checkPromptID(id string) error {
	if len(id) > 128 {
		return core.InvalidField("promptId", "promptId is %d bytes long; at most 128", len(id))
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return core.InvalidField("promptId", "promptId must not hold control characters")
		}
	}
	return nil
}

// Prompt runs a session/prompt: at once when nothing runs, else after
// the turns before it (or, with steer, inside the running turn).
func (s *Sessions) Prompt(ctx context.Context, p schema.SessionPromptParams, content []core.Content) (schema.SessionPromptResult, error) {
	if err := checkPromptID(p.PromptID); err != nil {
		return schema.SessionPromptResult{}, err
	}
	sess, err := s.Promptable(ctx, p.SessionID, content)
	if err != nil {
		return schema.SessionPromptResult{}, err
	}
	if err := s.opts.Workspace.Gone(ctx, sess.ID); err != nil {
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
	item, err := s.opts.Queues.Add(sess.ID, id, content, s.opts.Now().UTC())
	if err != nil {
		return schema.SessionPromptResult{}, err
	}
	got, err := s.opts.Queues.Await(ctx, item, func(ctx context.Context) (queue.Live, error) {
		l, err := s.EnsureLive(ctx, sess)
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
	res, err := s.PromptHeld(ctx, got.(queuedLive).l, content)
	s.opts.Queues.Done(item)
	out.StopReason = res.StopReason
	return out, err
}

// steer delivers content into the prompt turn running on sess, recording
// it as a user.message {steered: true} in order with the turn's events. It
// reports false (and no error) when no prompt turn runs: the prompt then
// runs as usual. A harness that cannot take input mid-turn is refused
// before anything changes.
func (s *Sessions) steer(ctx context.Context, sess core.Session, content []core.Content) (bool, error) {
	l := s.Live(sess.ID)
	if l == nil || !s.opts.Queues.Running(sess.ID) {
		return false, nil
	}
	if err := s.opts.Hosts.Require(ctx, l.Host, "session/prompt with steer", core.CapPromptSteer); err != nil {
		return false, err
	}
	st, ok := l.Harness.(core.Steerer)
	if !ok {
		e := core.Errorf(core.CodeUnavailable, "session/prompt with steer: the %s adapter does not implement it", l.Host.Harness())
		e.Missing = []string{core.CapPromptSteer}
		return false, e
	}
	payload, err := s.UserPayload(ctx, content)
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
			return core.HarnessFailed(l.Host.Harness(), err)
		}
		delivered = true
		if _, err := s.Append(context.WithoutCancel(ctx), sess.ID, core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(payload)}); err != nil {
			return fmt.Errorf("the prompt was delivered, recording it failed: %w", err)
		}
		return nil
	})
	return delivered, err
}
