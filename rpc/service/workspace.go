package service

import (
	"context"

	"github.com/bridge-dev/bridge/rpc/service/workspace"
	"github.com/bridge-dev/bridge/schema"
)

// GitRunner runs git in dir with args and returns its stdout; a failure's
// error carries git's stderr. Sessions' worktrees and diffs are
// rpc/service/workspace's.
type GitRunner = workspace.Git

// SessionDiff gives a session's changes since the commit it started from
// (or since a checkpoint): workspace.Diff.
func (s *Service) SessionDiff(ctx context.Context, p schema.SessionDiffParams) (schema.SessionDiffResult, error) {
	sess, err := s.session(ctx, p.SessionID)
	if err != nil {
		return schema.SessionDiffResult{}, err
	}
	return s.ws.Diff(ctx, sess, p)
}
