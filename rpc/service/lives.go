package service

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/lease"
	"github.com/bridge-dev/bridge/rpc/service/live"
)

// The running harness sessions are rpc/service/live's; rpc/service/sessions
// decides when one starts (StartLive) and what runs in it; the service
// hears from them through live.Env and lends them to the other parts.

// liveEnv is what the service lends every live session.
func (s *Service) liveEnv() live.Env {
	return live.Env{Store: s.opts.Store, Prices: s.opts.Prices, Notifier: s.opts.Notifier,
		Permissions: s.opts.Permissions, ApprovalTimeout: s.opts.ApprovalTimeout,
		Announce: s.announce, Gauge: func(l *live.Session, g core.Gauge) { s.ctl.Gauge(l, g) },
		Recorded: func(l *live.Session) { s.ctl.StartIdleClock(l) },
		Stopped:  func(l *live.Session) { s.leases.Release(l.ID) }}
}

// ProcessOwner names this process among those sharing a record
// (lease.ProcessOwner): the default Options.LeaseOwner.
var ProcessOwner = lease.ProcessOwner

// leasedSessions lends the live sessions to the lease renewer.
type leasedSessions struct{ s *Service }

func (x leasedSessions) Running(sessionID string) bool { return x.s.liveFor(sessionID) != nil }

func (x leasedSessions) Alive() []string {
	var ids []string
	for _, l := range x.s.lives.All() {
		if l.Alive() {
			ids = append(ids, l.ID)
		}
	}
	return ids
}

func (x leasedSessions) Stop(ctx context.Context, sessionID string) {
	if l := x.s.liveFor(sessionID); l != nil {
		_ = l.Close(ctx)
	}
}

// liveFor returns the running harness session of sessionID, or nil.
func (s *Service) liveFor(sessionID string) *live.Session { return s.lives.Get(sessionID) }
