package service

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
	"github.com/bridge-dev/bridge/rpc/service/live"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/schema"
)

// The checkpoint controller raises checkpoints on its own at the moments
// that matter: after a turn that completed a plan step (phase_boundary),
// before an idle or closed session's process is stopped (before_suspend),
// at shutdown (before_shutdown) and before a risky native resume
// (before_native_resume). Every one goes through Decide and its
// suppressions, like a checkpoint a client asks for.

// Defaults of the controller's options.
const (
	DefaultSuspendAfter       = 30 * time.Minute
	DefaultShutdownCheckpoint = 20 * time.Second
	DefaultRiskyResumeEntries = 200
)

// autoCheckpoint runs the controller for reason on a session, waiting for
// a running turn to end first, and logs what happened: a suppression as a
// log line, a failure as a warning.
func (s *Service) autoCheckpoint(ctx context.Context, sessionID string, reason checkpoint.Reason) (checkpointer.Outcome, error) {
	out, err := s.ckpt.Checkpoint(ctx, sessionID, checkpointer.Request{Reason: reason, Wait: true})
	switch {
	case err == nil:
		s.opts.Notifier.Log(4, fmt.Sprintf("session %s: %s checkpoint %s (%s)", sessionID, reason, out.EntryID, out.Provenance))
	case checkpointer.Suppressed(err) != "":
		s.opts.Notifier.Log(4, fmt.Sprintf("session %s: %s suppressed (%s): %v", sessionID, reason, checkpointer.Suppressed(err), err))
	default:
		s.opts.Notifier.Log(2, fmt.Sprintf("session %s: %s checkpoint: %v", sessionID, reason, err))
	}
	return out, err
}

// lockTurn takes l.Turn, waiting until it is released or ctx ends.
func lockTurn(ctx context.Context, l *live.Session) error {
	if err := l.Turn.LockContext(ctx); err != nil {
		return core.E(core.CodeBusy, fmt.Sprintf("session %s is still running a turn", l.ID), err)
	}
	return nil
}

// afterTurn runs once a prompt's turn has ended and its lock is released:
// a turn that completed at least one plan step ends with a phase_boundary
// decision, in the background (the prompt's reply does not wait for it).
func (s *Service) afterTurn(l *live.Session, stepsCompleted int) {
	l.Touch()
	if stepsCompleted == 0 {
		return
	}
	l.BeginAuto()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer l.EndAuto()
		ctx, cancel := context.WithTimeout(s.life, 2*s.opts.CheckpointTimeout+10*time.Second)
		defer cancel()
		_, _ = s.autoCheckpoint(ctx, l.ID, checkpoint.ReasonPhaseBoundary)
	}()
}

// SuspendOutcome is what a suspension did.
type SuspendOutcome struct {
	// Suspended is false when the session had no running process.
	Suspended bool
	// CheckpointEntryID is the before_suspend checkpoint, when one was
	// written.
	CheckpointEntryID string
	// Suppressed names the rule that stopped the checkpoint, when one did.
	Suppressed string
}

// SessionSuspend checkpoints a live session (before_suspend, when the
// decision allows) and stops its harness process; the record says status
// "suspended", and the next prompt or session/resume brings the session
// back (natively where the harness can). A session whose process is not
// running is left alone. A session running a turn is busy.
func (s *Service) SessionSuspend(ctx context.Context, p schema.SessionSuspendParams) (schema.SessionSuspendResult, error) {
	out, err := s.suspend(ctx, p.SessionID, "client", false)
	if err != nil {
		return schema.SessionSuspendResult{}, err
	}
	return schema.SessionSuspendResult{Suspended: out.Suspended, CheckpointEntryID: out.CheckpointEntryID,
		Suppressed: out.Suppressed}, nil
}

// suspend is Suspend; by says who asked ("client" or "idle"); wait waits
// for a running turn instead of refusing.
func (s *Service) suspend(ctx context.Context, sessionID, by string, wait bool) (SuspendOutcome, error) {
	if _, err := s.session(ctx, sessionID); err != nil {
		return SuspendOutcome{}, err
	}
	l := s.liveFor(sessionID)
	if l == nil {
		return SuspendOutcome{}, nil
	}
	var out SuspendOutcome
	turns := l.Turns()
	cp, err := s.ckpt.Checkpoint(ctx, sessionID, checkpointer.Request{Reason: checkpoint.ReasonBeforeSuspend, Wait: wait})
	switch {
	case err == nil:
		out.CheckpointEntryID = cp.EntryID
	case checkpointer.Suppressed(err) == checkpoint.SuppressedToolInFlight || checkpointer.Suppressed(err) == checkpoint.SuppressedApproval:
		return SuspendOutcome{}, core.Errorf(core.CodeBusy, "session %s: %v", sessionID, err)
	case checkpointer.Suppressed(err) != "":
		out.Suppressed = checkpointer.Suppressed(err)
	case core.ErrorCode(err) == core.CodeBusy:
		return SuspendOutcome{}, err
	default:
		// The checkpoint failed (and says so in the record); suspend anyway:
		// the process is stopped either way, and a native resume or the
		// previous checkpoint brings the session back.
		s.opts.Notifier.Log(2, fmt.Sprintf("session %s: before_suspend checkpoint: %v", sessionID, err))
	}
	if err := lockTurn(ctx, l); err != nil {
		return SuspendOutcome{}, err
	}
	defer l.Turn.Unlock()
	if s.liveFor(sessionID) != l {
		return out, nil // stopped meanwhile
	}
	promptedSince := l.Turns() != turns
	if promptedSince && by == "idle" {
		return SuspendOutcome{}, core.Errorf(core.CodeBusy, "session %s was prompted meanwhile; no longer idle", sessionID)
	}
	if err := l.Close(ctx); err != nil {
		s.opts.Notifier.Log(2, fmt.Sprintf("session %s: stopping the harness to suspend: %v", sessionID, err))
	}
	if _, err := s.appendEntries(context.WithoutCancel(ctx), sessionID, core.NewEntry{Kind: core.KindSessionStatus,
		Payload: core.Payload(core.StatusPayload{Status: "suspended", By: by})}); err != nil {
		return SuspendOutcome{}, core.E(core.CodePersistence, "record the suspension", err)
	}
	out.Suspended = true
	return out, nil
}

// suspendAfter is how long a live session may stay idle.
func (s *Service) suspendAfter() time.Duration {
	if s.opts.SuspendAfter > 0 {
		return s.opts.SuspendAfter
	}
	return DefaultSuspendAfter
}

// startIdleClock arms the idle suspension of a recorded live session.
func (s *Service) startIdleClock(l *live.Session) {
	if s.opts.SuspendAfter < 0 {
		return
	}
	l.StartIdleClock(s.suspendAfter(), func() { s.idle(l) })
}

// idle runs when a live session's idle clock fires: a session in a turn
// (or with a controller checkpoint under way) starts a new clock; an idle
// one is suspended.
func (s *Service) idle(l *live.Session) {
	if s.life.Err() != nil || s.liveFor(l.ID) != l {
		return
	}
	if l.AutoRunning() || l.Turn.Held() {
		l.Touch()
		return
	}
	s.bg.Add(1)
	defer s.bg.Done()
	l.BeginAuto() // a prompt arriving now waits, then starts the process again
	defer l.EndAuto()
	ctx, cancel := context.WithTimeout(s.life, 2*s.opts.CheckpointTimeout+10*time.Second)
	defer cancel()
	out, err := s.suspend(ctx, l.ID, "idle", true)
	switch {
	case err != nil && core.ErrorCode(err) == core.CodeBusy:
		l.Touch() // a turn began meanwhile; try again later
	case err != nil:
		s.opts.Notifier.Log(2, fmt.Sprintf("session %s: idle suspension: %v", l.ID, err))
	case out.Suspended:
		s.opts.Notifier.Log(3, fmt.Sprintf("session %s: suspended after %s idle", l.ID, s.suspendAfter()))
	}
}

// shutdownCheckpoints gives every live session with meaningful work since
// its last boundary a before_shutdown checkpoint, all in parallel, within
// the configured total time. A session that does not finish in time is
// left as it is (its request is cancelled) and a log line says so.
func (s *Service) shutdownCheckpoints(ctx context.Context) {
	if s.opts.NoShutdownCheckpoint {
		return
	}
	limit := s.opts.ShutdownCheckpoint
	if limit <= 0 {
		limit = DefaultShutdownCheckpoint
	}
	lives := s.lives.All()
	if len(lives) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var wg sync.WaitGroup
	for _, l := range lives {
		if !l.Alive() {
			continue
		}
		wg.Add(1)
		go func(l *live.Session) {
			defer wg.Done()
			_, err := s.autoCheckpoint(ctx, l.ID, checkpoint.ReasonBeforeShutdown)
			if err != nil && ctx.Err() != nil {
				s.opts.Notifier.Log(2, fmt.Sprintf("session %s: the before_shutdown checkpoint did not finish within %s; the session is left as it is", l.ID, limit))
			}
		}(l)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit + shutdownGrace):
		s.opts.Notifier.Log(2, fmt.Sprintf("before_shutdown checkpoints still running %s after the %s limit; shutting down", shutdownGrace, limit))
	}
}

// shutdownGrace is how long shutdown waits, past the checkpoint limit, for
// cancelled checkpoints to record their failure.
const shutdownGrace = 3 * time.Second

// riskyResume says why resuming sess natively is risky ("" when it is
// not): the harness program's version differs from the one that last ran
// the session, or the session's last boundary is more than
// RiskyResumeEntries entries behind its head.
func (s *Service) riskyResume(ctx context.Context, h core.BridgeHost, sess core.Session) string {
	if last := s.lastHarnessVersion(ctx, sess.ID); last != "" {
		if now := s.hosts.Capabilities(ctx, h).Version; now != "" && now != last {
			return fmt.Sprintf("the harness version changed from %q to %q", last, now)
		}
	}
	limit := s.opts.RiskyResumeEntries
	if limit == 0 {
		limit = DefaultRiskyResumeEntries
	}
	if limit < 0 || sess.HeadID == "" {
		return ""
	}
	head, err := s.opts.Store.GetEntry(ctx, sess.HeadID)
	if err != nil {
		return ""
	}
	var since int64 = head.Seq
	if sess.LatestCheckpointID != "" {
		if cp, err := s.opts.Store.GetEntry(ctx, sess.LatestCheckpointID); err == nil {
			since = head.Seq - cp.Seq
		}
	}
	if since > int64(limit) {
		return fmt.Sprintf("%d entries since the last boundary (more than %d)", since, limit)
	}
	return ""
}

// auditHarnessStarted is the audit kind recording which version of its
// harness program ran a session.
const auditHarnessStarted = "harness.started"

// harnessStarted is a harness.started audit record's body.
type harnessStarted struct {
	Harness string `json:"harness"`
	Version string `json:"version"`
}

// recordHarnessVersion notes which version of the harness program runs a
// session now (an audit row, read by riskyResume).
func (s *Service) recordHarnessVersion(ctx context.Context, h core.BridgeHost, sessionID string) {
	v := s.hosts.Capabilities(ctx, h).Version
	if v == "" {
		return
	}
	if err := s.opts.Store.AppendAudit(context.WithoutCancel(ctx), core.AuditRecord{Source: "session", Kind: auditHarnessStarted,
		Entity: sessionID, Body: core.Payload(harnessStarted{Harness: h.Harness(), Version: v})}); err != nil {
		s.opts.Notifier.Log(2, fmt.Sprintf("session %s: could not record the harness version: %v", sessionID, err))
	}
}

// lastHarnessVersion is the version of the harness program that last ran
// the session ("" when unknown).
func (s *Service) lastHarnessVersion(ctx context.Context, sessionID string) string {
	rows, err := s.opts.Store.Audit(ctx, sessionID, auditHarnessStarted)
	if err != nil || len(rows) == 0 {
		return ""
	}
	var body struct {
		Version string `json:"version"`
	}
	_ = json.Unmarshal(rows[len(rows)-1].Body, &body)
	return body.Version
}
