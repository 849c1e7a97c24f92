package service

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
	"github.com/bridge-dev/bridge/rpc/service/live"
	"github.com/bridge-dev/bridge/schema"
)

// Checkpoints are rpc/service/checkpointer's, and the checkpoints Bridge
// raises on its own (and session/compact, session/suspend) are
// rpc/service/controller's; the service asks them for it and lends them
// the session flows (controlSessions).

// DirectChatPreset is the preset name of a direct chat, which never
// auto-compacts.
const DirectChatPreset = checkpointer.DirectChatPreset

// SessionSuspend checkpoints a live session (before_suspend, when the
// decision allows) and stops its harness process; the record says status
// "suspended", and the next prompt or session/resume brings the session
// back (natively where the harness can). A session whose process is not
// running is left alone. A session running a turn is busy.
func (s *Service) SessionSuspend(ctx context.Context, p schema.SessionSuspendParams) (schema.SessionSuspendResult, error) {
	out, err := s.ctl.Suspend(ctx, p.SessionID)
	if err != nil {
		return schema.SessionSuspendResult{}, err
	}
	return schema.SessionSuspendResult{Suspended: out.Suspended, CheckpointEntryID: out.CheckpointEntryID,
		Suppressed: out.Suppressed}, nil
}

// controlSessions lends the controller and the checkpointer the session
// flows (rpc/service/sessions), which are made after them: they tell the
// controller what they did.
type controlSessions struct{ s *Service }

func (c controlSessions) EnsureLive(ctx context.Context, sess core.Session) (*live.Session, error) {
	return c.s.sess.EnsureLive(ctx, sess)
}

func (c controlSessions) Ask(ctx context.Context, l *live.Session, prompt string) (string, error) {
	return c.s.sess.Ask(ctx, l, prompt)
}
