package service

import (
	"context"

	"github.com/bridge-dev/bridge/core"
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
}
