package service

import (
	"context"
	"fmt"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/lease"
	"github.com/bridge-dev/bridge/rpc/service/live"
)

// The running harness sessions are rpc/service/live's; the service decides
// when one starts (startLive), and hears from it through live.Env.

// liveEnv is what the service lends every live session.
func (s *Service) liveEnv() live.Env {
	return live.Env{Store: s.opts.Store, Prices: s.opts.Prices, Notifier: s.opts.Notifier,
		Permissions: s.opts.Permissions, ApprovalTimeout: s.opts.ApprovalTimeout,
		Announce: s.announce, Gauge: s.onGauge, Recorded: s.startIdleClock,
		Stopped: func(l *live.Session) { s.leases.Release(l.ID) }}
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

// startLive starts (or natively resumes, when native != "") a harness
// session for the Bridge session sess and registers it.
//
// When recorded is false the session row does not exist yet: events wait
// until the caller has created it and called MarkRecorded.
func (s *Service) startLive(ctx context.Context, h core.BridgeHost, sess core.Session, preset core.Preset, native string, recorded bool) (*live.Session, error) {
	if err := s.leases.Claim(ctx, sess.ID); err != nil {
		return nil, err
	}
	l := s.lives.New(sess.ID, h, preset, recorded)
	req := core.CreateRequest{Cwd: sess.Cwd, Preset: preset, Model: sess.Model, Effort: sess.Effort, Title: sess.Title,
		Approve: l.Approve}
	var (
		harness core.Live
		err     error
	)
	if native != "" {
		r, ok := h.(core.NativeResumer)
		if !ok {
			return nil, core.Errorf(core.CodeUnavailable, "harness %q cannot resume natively", h.Harness())
		}
		harness, err = r.Resume(ctx, core.ResumeRequest{CreateRequest: req, NativeID: native}, l.Sink)
	} else {
		harness, err = h.CreateSession(ctx, req, l.Sink)
	}
	if err != nil {
		s.leases.Release(sess.ID)
		return nil, err
	}
	l.Harness = harness
	if id := harness.NativeID(); id != "" && recorded {
		if _, err := s.opts.Store.PatchSession(ctx, sess.ID, core.SessionPatch{NativeSessionID: core.Ptr(id)}); err != nil {
			_ = harness.Close(ctx)
			return nil, fmt.Errorf("record native session id: %w", err)
		}
	}
	s.lives.Put(l)
	if recorded {
		go l.Watch()
		s.startIdleClock(l)
	}
	s.recordHarnessVersion(ctx, h, sess.ID)
	return l, nil
}
