package sessions

import (
	"context"
	"fmt"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/live"
)

// StartLive starts (or natively resumes, when native != "") a harness
// session for the Bridge session sess and registers it.
//
// When recorded is false the session row does not exist yet: events wait
// until the caller has created it and called MarkRecorded.
func (s *Sessions) StartLive(ctx context.Context, h core.BridgeHost, sess core.Session, preset core.Preset, native string, recorded bool) (*live.Session, error) {
	if err := s.opts.Leases.Claim(ctx, sess.ID); err != nil {
		return nil, err
	}
	l := s.opts.Lives.New(sess.ID, h, preset, recorded)
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
		s.opts.Leases.Release(sess.ID)
		return nil, err
	}
	l.Harness = harness
	if id := harness.NativeID(); id != "" && recorded {
		if _, err := s.opts.Store.PatchSession(ctx, sess.ID, core.SessionPatch{NativeSessionID: core.Ptr(id)}); err != nil {
			_ = harness.Close(ctx)
			return nil, fmt.Errorf("record native session id: %w", err)
		}
	}
	s.opts.Lives.Put(l)
	if recorded {
		go l.Watch()
		s.opts.Controller.StartIdleClock(l)
	}
	s.opts.Controller.RecordHarnessVersion(ctx, h, sess.ID)
	return l, nil
}
