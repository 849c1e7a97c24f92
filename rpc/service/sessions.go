package service

import (
	"context"

	"github.com/bridge-dev/bridge/schema"
)

// The session flows (create, prompt, cancel, rename, archive, history,
// resume, models) are rpc/service/sessions'; the service answers the
// requests with them; they tell the checkpoint controller what they did
// through their own sessions.Controller, which *controller.Controller is.

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
