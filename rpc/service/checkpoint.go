package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/service/hosts"
)

// retainPolicy is how much conversation a checkpoint keeps verbatim after
// it: the last six messages and what came with them.
var retainPolicy = checkpoint.RetainPolicy{KeepMessages: 6}

// checkpointNow writes a Bridge checkpoint of the session now. The session's
// own agent writes it when its harness is running; otherwise Bridge
// reconstructs it from the record and the repository.
func (s *Service) checkpointNow(ctx context.Context, sessionID, reason string) (CheckpointOutcome, error) {
	r := checkpoint.Reason(reason)
	if r == "" {
		r = checkpoint.ReasonManual
	}
	if !r.Known() {
		return CheckpointOutcome{}, invalidField("reason", "reason %q is not one of %v", reason, checkpoint.Reasons)
	}
	return s.checkpoint(ctx, sessionID, r, "")
}

// checkpoint runs the whole flow (ARCHITECTURE.md, Checkpoints) for one
// session; a session that is running a turn refuses with busy.
func (s *Service) checkpoint(ctx context.Context, sessionID string, reason checkpoint.Reason, focus string) (CheckpointOutcome, error) {
	return s.runCheckpoint(ctx, sessionID, reason, focus, false)
}

// runCheckpoint is checkpoint; with wait, a running turn is waited for
// (until ctx ends) instead of refused.
func (s *Service) runCheckpoint(ctx context.Context, sessionID string, reason checkpoint.Reason, focus string, wait bool) (CheckpointOutcome, error) {
	sess, err := s.session(ctx, sessionID)
	if err != nil {
		return CheckpointOutcome{}, err
	}
	for !s.beginCheckpoint(sessionID) {
		if !wait {
			return CheckpointOutcome{}, core.Errorf(core.CodeBusy, "a checkpoint of session %s is already being written", sessionID)
		}
		// The controller waits for the checkpoint under way (then decides
		// afresh: it may have saved the work already).
		select {
		case <-ctx.Done():
			return CheckpointOutcome{}, core.E(core.CodeBusy, fmt.Sprintf("a checkpoint of session %s is still being written", sessionID), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	defer s.endCheckpoint(sessionID)

	win, err := s.opts.Store.Window(ctx, sessionID)
	if err != nil {
		return CheckpointOutcome{}, err
	}
	lock := checkpoint.PendingOf(win, s.startedAt)
	if err := lock.Err(); err != nil {
		return CheckpointOutcome{}, err
	}
	l := s.liveFor(sessionID)
	state := checkpoint.ActivityOf(win).Apply(s.controllerState(ctx, sess, l, reason == checkpoint.ReasonContextPressure || reason == checkpoint.ReasonResponseReserve))
	if l != nil && l.approvals.busy() {
		state.ApprovalPending = true // asked, perhaps not recorded yet
	}
	state.Dead = l == nil
	if d := checkpoint.Decide(reason, state); !d.Fire {
		code := core.CodeInvalid
		if d.Suppressed == checkpoint.SuppressedToolInFlight || d.Suppressed == checkpoint.SuppressedApproval {
			code = core.CodeBusy
		}
		return CheckpointOutcome{}, d.Refusal(code)
	}
	if l == nil {
		return s.recoveryCheckpoint(ctx, sess, win, reason, false)
	}
	if wait {
		if err := lockTurn(ctx, l); err != nil {
			return CheckpointOutcome{}, err
		}
		// The turn waited for may have added to the record.
		if win, err = s.opts.Store.Window(ctx, sessionID); err != nil {
			l.turn.Unlock()
			return CheckpointOutcome{}, err
		}
		if d := checkpoint.Decide(reason, checkpoint.ActivityOf(win).Apply(state)); !d.Fire {
			l.turn.Unlock()
			return CheckpointOutcome{}, d.Refusal(core.CodeInvalid)
		}
	} else if !l.turn.TryLock() {
		return CheckpointOutcome{}, core.Errorf(core.CodeBusy, "session %s is running a turn; checkpoint after it ends", sessionID)
	}
	locked := true
	defer func() {
		if locked {
			l.turn.Unlock()
		}
	}()

	method := s.checkpointMethod(ctx, l)
	if method == core.CheckpointReconstructed {
		// The harness cannot fork and the preset does not ask for the
		// live thread: rebuilt from the record, nothing asked of the model.
		return s.recoveryCheckpoint(ctx, sess, win, reason, true)
	}
	ev := checkpoint.EvidenceOf(win)
	plan, err := s.planRetention(ctx, sessionID, win)
	if err != nil {
		return CheckpointOutcome{}, err
	}
	first, marker := plan.FirstRetainedEntryID, s.opts.IDs.New("e_")
	if first == "" {
		first = marker
	}
	book := checkpoint.Bookkeeping{SourceAgent: sessionID, FirstRetainedEntryID: first,
		TokensBefore: s.tokensBefore(l, win), Reason: reason}
	req := checkpoint.Request{Reason: reason, TokensBefore: book.TokensBefore, SourceAgent: sessionID,
		FirstRetainedEntryID: first, Method: method}
	opened, err := s.appendOrdered(ctx, l, checkpoint.RequestEntry(req))
	if err != nil {
		return CheckpointOutcome{}, core.E(core.CodePersistence, "record the checkpoint request", err)
	}

	ask := func(ctx context.Context, prompt string) (string, error) { return s.askLocked(ctx, l, prompt) }
	var usage *core.TokenUsage
	if method == core.CheckpointFork {
		fk, err := s.startFork(ctx, l)
		if err != nil {
			return CheckpointOutcome{}, s.checkpointFailed(ctx, l, sessionID, reason, 0, err)
		}
		defer fk.Close(context.WithoutCancel(ctx))
		ask = func(ctx context.Context, prompt string) (string, error) {
			r, err := fk.Ask(ctx, prompt)
			usage = usage.Add(r.Usage)
			return r.Text, err
		}
		// The fork holds the conversation as it stood; the live session
		// takes its turns meanwhile. What they record lies between the
		// request and the boundary, so when nothing before the request is
		// retained, retention starts at the request: those turns are kept
		// verbatim after the checkpoint, which does not cover them.
		l.turn.Unlock()
		locked = false
		if plan.FirstRetainedEntryID == "" && len(opened) > 0 {
			book.FirstRetainedEntryID = opened[0].ID
		}
	}
	prompt := checkpoint.RequestPrompt(reason, ev, checkpoint.PromptOptions{Focus: focus, Instructions: s.opts.CheckpointInstructions})
	draft, err := s.askDraft(ctx, ask, prompt)
	attempt := 0
	if err != nil && !isNoReply(err) {
		attempt = 1
		req.Attempt, req.RepairOf = 1, err.Error()
		if _, aerr := s.appendOrdered(ctx, l, checkpoint.RequestEntry(req)); aerr != nil {
			return CheckpointOutcome{}, core.E(core.CodePersistence, "record the repair request", aerr)
		}
		draft, err = s.askDraft(ctx, ask, checkpoint.RepairPrompt(err))
	}
	if err != nil {
		return CheckpointOutcome{}, s.checkpointFailed(ctx, l, sessionID, reason, attempt, err)
	}
	if !locked {
		// The boundary goes between turns: wait for a live turn under way.
		if err := lockTurn(ctx, l); err != nil {
			return CheckpointOutcome{}, s.checkpointFailed(ctx, l, sessionID, reason, attempt, err)
		}
		locked = true
	}
	cp, rep := checkpoint.Assemble(draft, ev, book)
	cp.Method, cp.ForkUsage = method, usage
	entries, err := s.commitCheckpoint(ctx, l, sessionID, cp, marker, checkpoint.EvidenceAudit(sessionID, rep))
	if err != nil {
		return CheckpointOutcome{}, err
	}
	s.opts.Notifier.CheckpointSaved(CheckpointSaved{SessionID: sessionID, EntryID: entries[0].ID,
		Reason: string(reason), Provenance: cp.Provenance, Method: method, Hot: true})
	return CheckpointOutcome{EntryID: entries[0].ID, Provenance: cp.Provenance, Reason: string(reason),
		Method: method, ForkUsage: usage}, nil
}

// checkpointMethod is how a checkpoint of the running session l is written
// (core.CheckpointMethodFor): a fork where the harness has session.fork and
// its live session implements core.Forker. A recent probe that says no is
// asked again before the checkpoint settles for less (a probe can fail on a
// loaded machine).
func (s *Service) checkpointMethod(ctx context.Context, l *liveSession) string {
	_, forker := l.live.(core.Forker)
	canFork := forker && (s.hosts.Capabilities(ctx, l.host).Has(core.CapSessionFork) || hosts.Probe(ctx, l.host).Has(core.CapSessionFork))
	return core.CheckpointMethodFor(l.preset, canFork)
}

// forkStartTimeout bounds starting a fork (a harness process may take
// seconds to load a long conversation on a loaded machine); the reply
// then has the checkpoint timeout.
const forkStartTimeout = time.Minute

// startFork forks the live session for a checkpoint.
func (s *Service) startFork(ctx context.Context, l *liveSession) (core.Fork, error) {
	ctx, cancel := context.WithTimeout(ctx, forkStartTimeout)
	defer cancel()
	fk, err := l.live.(core.Forker).Fork(ctx)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, core.E(core.CodeTimeout, fmt.Sprintf("the fork did not start within %s", forkStartTimeout), err)
		}
		return nil, core.E(core.CodeHarness, "fork the session for its checkpoint", err)
	}
	return fk, nil
}

// isNoReply tells a reply that never came (timeout, dead harness) from one
// that came and was unusable; only the latter gets a repair prompt.
func isNoReply(err error) bool {
	c := core.ErrorCode(err)
	return c == core.CodeTimeout || c == core.CodeHarness || c == core.CodeCancelled || c == core.CodeUnavailable
}

// askDraft asks (the fork, or the live session whose turn the caller
// holds) and parses the reply.
func (s *Service) askDraft(ctx context.Context, ask func(context.Context, string) (string, error), prompt string) (checkpoint.Draft, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.CheckpointTimeout)
	defer cancel()
	text, err := ask(ctx, prompt)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return checkpoint.Draft{}, core.E(core.CodeTimeout, fmt.Sprintf("no checkpoint reply within %s", s.opts.CheckpointTimeout), err)
		}
		return checkpoint.Draft{}, err
	}
	d, err := checkpoint.ParseReply(text)
	if err != nil {
		return checkpoint.Draft{}, core.E(core.CodeSummary, "the checkpoint reply is unusable", err)
	}
	return d, nil
}

// checkpointFailed records compaction.failed (entry and audit row) and
// returns the error to report.
func (s *Service) checkpointFailed(ctx context.Context, l *liveSession, sessionID string, reason checkpoint.Reason, attempt int, cause error) error {
	ctx = context.WithoutCancel(ctx)
	if _, err := s.appendOrdered(ctx, l, checkpoint.FailedEntry(reason, attempt, cause)); err != nil {
		return core.E(core.CodePersistence, "record the failed checkpoint", errors.Join(cause, err))
	}
	if err := s.opts.Store.AppendAudit(ctx, checkpoint.FailedAudit(sessionID, reason, attempt, cause)); err != nil {
		return core.E(core.CodePersistence, "audit the failed checkpoint", errors.Join(cause, err))
	}
	code := core.ErrorCode(cause)
	if code != core.CodeTimeout {
		code = core.CodeSummary
	}
	return core.E(code, "checkpoint failed", cause)
}

// commitCheckpoint writes, in one transaction, the checkpoint, its
// boundary, the branch.summary marker (the new head), the head's latest
// checkpoint and the audit row.
func (s *Service) commitCheckpoint(ctx context.Context, l *liveSession, sessionID string, cp checkpoint.Checkpoint, marker string, audit core.AuditRecord) ([]core.Entry, error) {
	if err := cp.Validate(); err != nil {
		return nil, core.E(core.CodeSummary, "the assembled checkpoint is invalid", err)
	}
	cpID := s.opts.IDs.New("e_")
	if l != nil {
		l.flush()
		l.order.Lock()
		defer l.order.Unlock()
	}
	var out []core.Entry
	err := s.opts.Store.Update(ctx, func(w core.Writer) error {
		es, err := w.Append(ctx, sessionID, checkpoint.CommitEntries(cp, cpID, marker)...)
		if err != nil {
			return err
		}
		out = es
		if _, err := w.PatchSession(ctx, sessionID, core.SessionPatch{LatestCheckpointID: core.Ptr(cpID)}); err != nil {
			return err
		}
		return w.AppendAudit(ctx, audit)
	})
	if err != nil {
		return nil, core.E(core.CodeCommit, "commit the checkpoint", err)
	}
	s.announce(out...)
	return out, nil
}

// recoveryCheckpoint reconstructs a checkpoint from the record (its window
// summary and newest entries) and the repository state of its cwd: for a
// session whose harness is not running, or (hot) a running one whose
// harness cannot fork, when the preset does not ask for the live thread.
func (s *Service) recoveryCheckpoint(ctx context.Context, sess core.Session, win core.Window, reason checkpoint.Reason, hot bool) (CheckpointOutcome, error) {
	status := ""
	if s.opts.RepoStatus != nil && sess.Cwd != "" {
		st, err := s.opts.RepoStatus(ctx, sess.Cwd)
		if err != nil {
			s.opts.Notifier.Log(2, fmt.Sprintf("session %s: no repository evidence from %s: %v", sess.ID, sess.Cwd, err))
		} else {
			status = st
		}
	}
	plan, err := s.planRetention(ctx, sess.ID, win)
	if err != nil {
		return CheckpointOutcome{}, err
	}
	first, marker := plan.FirstRetainedEntryID, s.opts.IDs.New("e_")
	if first == "" {
		first = marker
	}
	in, err := s.recovery(ctx, sess.ID, win)
	if err != nil {
		return CheckpointOutcome{}, err
	}
	in.Running = hot
	tokens := win.Tokens
	if l := s.liveFor(sess.ID); hot && l != nil {
		tokens = s.tokensBefore(l, win)
	}
	rec, err := checkpoint.ReconstructFrom(in, status, checkpoint.Bookkeeping{SourceAgent: sess.ID,
		FirstRetainedEntryID: first, TokensBefore: tokens, Reason: reason})
	if err != nil {
		return CheckpointOutcome{}, err
	}
	rec.Checkpoint.Method = core.CheckpointReconstructed
	entries, err := s.commitCheckpoint(ctx, s.liveFor(sess.ID), sess.ID, rec.Checkpoint, marker, checkpoint.RecoveryAudit(sess.ID, rec))
	if err != nil {
		return CheckpointOutcome{}, err
	}
	s.opts.Notifier.CheckpointSaved(CheckpointSaved{SessionID: sess.ID, EntryID: entries[0].ID,
		Reason: string(reason), Provenance: rec.Checkpoint.Provenance, Method: core.CheckpointReconstructed, Hot: hot})
	return CheckpointOutcome{EntryID: entries[0].ID, Provenance: rec.Checkpoint.Provenance, Reason: string(reason),
		Method: core.CheckpointReconstructed}, nil
}

// tokensBefore is the context size now: the gauge when there is one, else
// the sum of the token estimates since the last boundary.
func (s *Service) tokensBefore(l *liveSession, win core.Window) int64 {
	l.mu.Lock()
	g := l.gauge
	l.mu.Unlock()
	if g != nil {
		return g.Used
	}
	return win.Tokens
}

// appendOrdered appends entries in order with the session's harness events.
func (s *Service) appendOrdered(ctx context.Context, l *liveSession, es ...core.NewEntry) ([]core.Entry, error) {
	return l.appendInOrder(ctx, es...)
}

func (s *Service) beginCheckpoint(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inCheckpoint == nil {
		s.inCheckpoint = map[string]bool{}
	}
	if s.inCheckpoint[id] {
		return false
	}
	s.inCheckpoint[id] = true
	return true
}

func (s *Service) endCheckpoint(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inCheckpoint, id)
}

// onGauge runs the controller on a context gauge reading, on the
// goroutine that records the session's events, so it decides from what it
// holds (the reading, the queued flag, the last capability probe) and
// reads nothing: where Bridge is the sole owner of the window (a gauge and
// no compaction of the harness's own), a reading at 75% (context_pressure)
// or into the response reserve queues one controller checkpoint, unless
// one is queued already. The queued worker waits for the turn to end and
// decides with the record (no new work, a tool in flight, a fresh probe
// that finds a compaction command: suppressed, logged).
func (s *Service) onGauge(l *liveSession, g core.Gauge) {
	st := checkpoint.State{HasGauge: true, GaugeUsed: g.Used, GaugeSize: g.Size,
		ResponseReserve: s.opts.ResponseReserve, MeaningfulWork: true}
	if p, ok := s.hosts.Cached(l.host); ok {
		st.OwnCompaction = p.Has(core.CapCompactCommand)
	}
	var reasons []checkpoint.Reason
	for _, r := range []checkpoint.Reason{checkpoint.ReasonContextPressure, checkpoint.ReasonResponseReserve} {
		if checkpoint.Decide(r, st).Fire {
			reasons = append(reasons, r)
		}
	}
	if len(reasons) == 0 {
		return
	}
	l.mu.Lock()
	queued := l.controllerQueued
	l.controllerQueued = true
	l.mu.Unlock()
	if queued {
		return
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer func() {
			l.mu.Lock()
			l.controllerQueued = false
			l.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(s.life, 2*s.opts.CheckpointTimeout+10*time.Second)
		defer cancel()
		s.controllerCheckpoint(ctx, l, reasons)
	}()
}

// controllerCheckpoint is the queued work of onGauge: with a fresh probe
// and the latest gauge, the first window reason that still fires gets a
// checkpoint (runCheckpoint waits for the running turn and decides with
// the record).
func (s *Service) controllerCheckpoint(ctx context.Context, l *liveSession, reasons []checkpoint.Reason) {
	sess, err := s.opts.Store.GetSession(ctx, l.sessionID)
	if err != nil {
		return
	}
	st := s.controllerState(ctx, sess, l, true)
	st.MeaningfulWork = true
	for _, r := range reasons {
		if checkpoint.Decide(r, st).Fire {
			_, _ = s.autoCheckpoint(ctx, l.sessionID, r)
			return
		}
	}
}

// checkNotPending refuses with busy while a checkpoint request opened by
// this process is pending on the session (a native compaction must not race
// a Bridge checkpoint).
func (s *Service) checkNotPending(ctx context.Context, sessionID string) error {
	s.mu.Lock()
	busy := s.inCheckpoint[sessionID]
	s.mu.Unlock()
	if busy {
		return core.Errorf(core.CodeBusy, "a checkpoint of session %s is being written", sessionID)
	}
	win, err := s.opts.Store.Window(ctx, sessionID)
	if err != nil {
		return err
	}
	return checkpoint.PendingOf(win, s.startedAt).Err()
}

// controllerState is what the decision function needs to know about a
// session besides its record: the gauge, who owns the window, direct chat.
// A gauge reading is its own proof that the harness reports one. fresh
// probes the host anew (capabilities some adapters learn while a session
// runs, such as a compaction command); otherwise a recent probe serves.
func (s *Service) controllerState(ctx context.Context, sess core.Session, l *liveSession, fresh bool) checkpoint.State {
	st := checkpoint.State{ResponseReserve: s.opts.ResponseReserve, DirectChat: sess.Preset == DirectChatPreset}
	if l == nil {
		return st
	}
	p := s.hosts.Capabilities(ctx, l.host)
	if fresh {
		p = hosts.Probe(ctx, l.host)
	}
	st.OwnCompaction = p.Has(core.CapCompactCommand)
	l.mu.Lock()
	if l.gauge != nil {
		st.HasGauge = true
		st.GaugeUsed, st.GaugeSize = l.gauge.Used, l.gauge.Size
	}
	l.mu.Unlock()
	return st
}

// DirectChatPreset is the preset name of a direct chat, which never
// auto-compacts.
const DirectChatPreset = "direct"
