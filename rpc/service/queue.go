package service

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// The prompt queue (ARCHITECTURE.md, Queue and steer; the queues are
// rpc/service/queue's, session/prompt's flow over them is
// rpc/service/sessions' Prompt). session/queue lists the waiting prompts,
// session/withdraw takes one back (its request is answered with stopReason
// "withdrawn"), and session/cancel withdraws them all when asked
// (clearQueue).

// QueueNotifier is a Notifier told of queue changes (session/queueChanged).
type QueueNotifier = peer.QueueNotifier

// queueChanged tells the client sessionID's queue is now items.
func (s *Service) queueChanged(sessionID string, items []schema.QueuedPrompt) {
	if n, ok := s.opts.Notifier.(QueueNotifier); ok {
		n.QueueChanged(sessionID, items)
	}
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
