package service

import (
	"context"
	"fmt"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
	"github.com/bridge-dev/bridge/rpc/service/live"
	"github.com/bridge-dev/bridge/schema"
)

// The session flows (create, prompt, cancel, rename, archive, history,
// resume, models) are rpc/service/sessions'; the service answers the
// requests with them and tells the checkpoint controller what they did
// (controllerHooks).

// SessionModels lists the models the session's harness offers, with their
// context window where known, and the session's current model and effort.
func (s *Service) SessionModels(ctx context.Context, p schema.SessionModelsParams) (schema.SessionModelsResult, error) {
	return s.sess.Models(ctx, p)
}

// SessionSelectModel switches a live session's model and/or effort (a
// downgrade writes a before_downgrade checkpoint first).
func (s *Service) SessionSelectModel(ctx context.Context, p schema.SessionSelectModelParams) (schema.SessionSelectModelResult, error) {
	return s.sess.SelectModel(ctx, p)
}

// controllerHooks tells the checkpoint controller what the session flows
// did (sessions.Controller).
type controllerHooks struct{ s *Service }

func (c controllerHooks) AfterTurn(l *live.Session, steps int) { c.s.afterTurn(l, steps) }
func (c controllerHooks) StartIdleClock(l *live.Session)       { c.s.startIdleClock(l) }

func (c controllerHooks) RecordHarnessVersion(ctx context.Context, h core.BridgeHost, sessionID string) {
	c.s.recordHarnessVersion(ctx, h, sessionID)
}

// BeforeNativeResume: before a risky native attempt, a checkpoint rebuilt
// from the record, so that a failed native resume falls back to a current
// projection.
func (c controllerHooks) BeforeNativeResume(ctx context.Context, h core.BridgeHost, sess core.Session) (core.Session, error) {
	why := c.s.riskyResume(ctx, h, sess)
	if why == "" {
		return sess, nil
	}
	c.s.opts.Notifier.Log(3, fmt.Sprintf("session %s: native resume is risky (%s)", sess.ID, why))
	if _, err := c.s.autoCheckpoint(ctx, sess.ID, checkpoint.ReasonBeforeNativeResume); err != nil && checkpointer.Suppressed(err) == "" {
		return core.Session{}, err
	}
	return c.s.session(ctx, sess.ID)
}
