package service

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/library"
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

// forkSessions lends the live sessions to a fork (library.Sessions).
type forkSessions struct{ s *Service }

func (f forkSessions) Create(ctx context.Context, p schema.SessionCreateParams) (core.Session, error) {
	return f.s.sess.Create(ctx, p)
}

func (f forkSessions) Append(ctx context.Context, sessionID string, es ...core.NewEntry) ([]core.Entry, error) {
	return f.s.sess.Append(ctx, sessionID, es...)
}

func (f forkSessions) Running(sessionID string) bool { return f.s.liveFor(sessionID) != nil }

func (f forkSessions) Hold(sessionID string) (library.Turn, bool) {
	l := f.s.liveFor(sessionID)
	if l == nil || !l.Turn.TryLock() {
		return nil, false
	}
	return heldTurn{s: f.s, l: l}, true
}
