package service

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// followLogger is a ChangeFeed that can say when it lost its connection.
type followLogger interface {
	FollowAppendsLogged(ctx context.Context, fn func([]core.Entry), logf func(string)) error
}

// follow announces, until the service's life ends, the entries other
// processes sharing the record append (Options.Follow, when the Store is a
// core.ChangeFeed): a client of this process sees a session another
// machine runs, updating.
func (s *Service) follow() {
	feed, ok := s.opts.Store.(core.ChangeFeed)
	if !ok || !s.opts.Follow {
		return
	}
	announce := func(es []core.Entry) { s.announce(es...) }
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		if fl, ok := feed.(followLogger); ok {
			_ = fl.FollowAppendsLogged(s.life, announce, func(msg string) { s.opts.Notifier.Log(2, msg) })
			return
		}
		_ = feed.FollowAppends(s.life, announce)
	}()
	if sf, ok := s.opts.Store.(core.SessionFeed); ok {
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			_ = sf.FollowSessions(s.life, func(id string) { s.sessionChanged(s.life, id) })
		}()
	}
}

// SessionNotifier is a Notifier told of sessions' title, archive and
// branch changes (session/changed).
type SessionNotifier = peer.SessionNotifier

// sessionChanged tells the client (session/changed, when the Notifier
// implements SessionNotifier) where session id stands now: its title,
// archive flag and head, read from the record.
func (s *Service) sessionChanged(ctx context.Context, id string) {
	n, ok := s.opts.Notifier.(SessionNotifier)
	if !ok {
		return
	}
	sess, err := s.opts.Store.GetSession(ctx, id)
	if err != nil {
		return // gone, or the record unreadable: nothing to tell
	}
	n.SessionChanged(schema.SessionChangedNotification{SessionID: sess.ID, Title: sess.Title, Archived: sess.Archived, HeadID: sess.HeadID})
}
