package service

import (
	"context"

	"github.com/bridge-dev/bridge/rpc/service/library"
	"github.com/bridge-dev/bridge/rpc/service/sessions"
	"github.com/bridge-dev/bridge/schema"
)

// SessionFork is session/fork: library.Fork starts a new session from the
// source's projection at an entry.
func (s *Service) SessionFork(ctx context.Context, p schema.SessionForkParams) (schema.SessionForkResult, error) {
	src, err := s.session(ctx, p.SessionID)
	if err != nil {
		return schema.SessionForkResult{}, err
	}
	return s.lib.Fork(ctx, src, p)
}

// forkSessions lends the session flows to a fork (library.Sessions).
type forkSessions struct{ *sessions.Sessions }

func (f forkSessions) Running(sessionID string) bool { return f.Live(sessionID) != nil }

func (f forkSessions) Hold(sessionID string) (library.Turn, bool) { return f.Sessions.Hold(sessionID) }
