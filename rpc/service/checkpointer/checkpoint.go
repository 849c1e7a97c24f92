package checkpointer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/rpc/service/hosts"
)

// retainPolicy is how much conversation a checkpoint keeps verbatim after
// it: the last six messages and what came with them.
var retainPolicy = checkpoint.RetainPolicy{KeepMessages: 6}

// Checkpoint runs the whole flow (ARCHITECTURE.md, Checkpoints) for one
// session, the one entry point for a client's request, a compaction's
// fallback, a model downgrade and the controller alike (r says how). The
// session's own agent writes it when its harness is running; otherwise
// Bridge reconstructs it from the record and the repository. Without
// r.Wait, a session running a turn refuses with busy; with it, the turn is
// waited for before the decision, which is then made once, with the
// record as the turn left it.
func (c *Checkpointer) Checkpoint(ctx context.Context, sessionID string, r Request) (Outcome, error) {
	sess, err := c.session(ctx, sessionID)
	if err != nil {
		return Outcome{}, err
	}
	end, err := c.begin(ctx, sessionID, r.Wait)
	if err != nil {
		return Outcome{}, err
	}
	defer end()
	l := c.opts.Lives.Live(sessionID)
	t := &turn{l: l}
	defer t.release()
	if l != nil && r.Wait {
		if err := t.hold(ctx, sessionID); err != nil {
			return Outcome{}, err
		}
	}
	win, err := c.decide(ctx, sess, l, r.Reason)
	if err != nil {
		return Outcome{}, err
	}
	if l == nil {
		return c.reconstruct(ctx, sess, win, r.Reason, false)
	}
	if !t.held && !t.try() {
		return Outcome{}, core.Errorf(core.CodeBusy, "session %s is running a turn; checkpoint after it ends", sessionID)
	}
	method := c.method(ctx, l)
	if method == core.CheckpointReconstructed {
		// The harness cannot fork and the preset does not ask for the
		// live thread: rebuilt from the record, nothing asked of the model.
		return c.reconstruct(ctx, sess, win, r.Reason, true)
	}
	return c.hot(ctx, t, sessionID, win, r, method)
}

// turn is a live session's turn as one checkpoint holds it.
type turn struct {
	l    Live
	held bool
}

func (t *turn) hold(ctx context.Context, sessionID string) error {
	if err := t.l.Hold(ctx); err != nil {
		return core.E(core.CodeBusy, fmt.Sprintf("session %s is still running a turn", sessionID), err)
	}
	t.held = true
	return nil
}

func (t *turn) try() bool {
	t.held = t.l.TryHold()
	return t.held
}

func (t *turn) release() {
	if t.held {
		t.l.Release()
		t.held = false
	}
}

// decide reads the session's window and refuses a checkpoint the decision
// function does not fire for (checkpoint.Decide: the suppression rule is
// the error's data), or one whose request is still pending.
func (c *Checkpointer) decide(ctx context.Context, sess core.Session, l Live, reason checkpoint.Reason) (core.Window, error) {
	win, err := c.opts.Store.Window(ctx, sess.ID)
	if err != nil {
		return core.Window{}, err
	}
	if err := checkpoint.PendingOf(win, c.opts.StartedAt).Err(); err != nil {
		return core.Window{}, err
	}
	pressure := reason == checkpoint.ReasonContextPressure || reason == checkpoint.ReasonResponseReserve
	state := checkpoint.ActivityOf(win).Apply(c.State(ctx, sess, l, pressure))
	if l != nil && l.ApprovalPending() {
		state.ApprovalPending = true // asked, perhaps not recorded yet
	}
	state.Dead = l == nil
	if d := checkpoint.Decide(reason, state); !d.Fire {
		code := core.CodeInvalid
		if d.Suppressed == checkpoint.SuppressedToolInFlight || d.Suppressed == checkpoint.SuppressedApproval {
			code = core.CodeBusy
		}
		return core.Window{}, d.Refusal(code)
	}
	return win, nil
}

// hot writes the checkpoint of a running session whose turn t holds: it
// opens the request, has the agent (a fork of the session, or the live
// thread) write the draft, and commits it between turns.
func (c *Checkpointer) hot(ctx context.Context, t *turn, sessionID string, win core.Window, r Request, method core.CheckpointMethod) (Outcome, error) {
	l := t.l
	ev := checkpoint.EvidenceOf(win)
	plan, err := c.planRetention(ctx, sessionID, win)
	if err != nil {
		return Outcome{}, err
	}
	first, marker := plan.FirstRetainedEntryID, c.opts.IDs.New("e_")
	if first == "" {
		first = marker
	}
	book := checkpoint.Bookkeeping{SourceAgent: sessionID, FirstRetainedEntryID: first,
		TokensBefore: tokensBefore(l, win), Reason: r.Reason}
	req := checkpoint.Request{Reason: r.Reason, TokensBefore: book.TokensBefore, SourceAgent: sessionID,
		FirstRetainedEntryID: first, Method: method}
	opened, err := l.Append(ctx, checkpoint.RequestEntry(req))
	if err != nil {
		return Outcome{}, core.E(core.CodePersistence, "record the checkpoint request", err)
	}
	ask := l.Ask
	var usage *core.TokenUsage
	if method == core.CheckpointFork {
		fk, err := startFork(ctx, l)
		if err != nil {
			return Outcome{}, c.failed(ctx, l, sessionID, r.Reason, 0, err)
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
		t.release()
		if plan.FirstRetainedEntryID == "" && len(opened) > 0 {
			book.FirstRetainedEntryID = opened[0].ID
		}
	}
	prompt := checkpoint.RequestPrompt(r.Reason, ev, checkpoint.PromptOptions{Focus: r.Focus, Instructions: c.opts.Instructions})
	draft, err := c.askDraft(ctx, ask, prompt)
	attempt := 0
	if err != nil && !isNoReply(err) {
		// An unusable reply (not one that never came) gets one repair
		// request, recorded as the request's second attempt.
		attempt = 1
		req.Attempt, req.RepairOf = 1, err.Error()
		if _, aerr := l.Append(ctx, checkpoint.RequestEntry(req)); aerr != nil {
			return Outcome{}, core.E(core.CodePersistence, "record the repair request", aerr)
		}
		draft, err = c.askDraft(ctx, ask, checkpoint.RepairPrompt(err))
	}
	if err != nil {
		return Outcome{}, c.failed(ctx, l, sessionID, r.Reason, attempt, err)
	}
	if !t.held {
		// The boundary goes between turns: wait for a live turn under way.
		if err := t.hold(ctx, sessionID); err != nil {
			return Outcome{}, c.failed(ctx, l, sessionID, r.Reason, attempt, err)
		}
	}
	cp, rep := checkpoint.Assemble(draft, ev, book)
	cp.Method, cp.ForkUsage = method, usage
	entries, err := c.commit(ctx, l, sessionID, cp, marker, checkpoint.EvidenceAudit(sessionID, rep))
	if err != nil {
		return Outcome{}, err
	}
	c.opts.Notifier.CheckpointSaved(peer.CheckpointSaved{SessionID: sessionID, EntryID: entries[0].ID,
		Reason: r.Reason, Provenance: cp.Provenance, Method: method, Hot: true})
	return Outcome{EntryID: entries[0].ID, Provenance: cp.Provenance, Reason: string(r.Reason),
		Method: method, ForkUsage: usage}, nil
}

// method is how a checkpoint of the running session l is written
// (core.CheckpointMethodFor): a fork where the harness has session.fork and
// its live session implements core.Forker. A recent probe that says no is
// asked again before the checkpoint settles for less (a probe can fail on a
// loaded machine).
func (c *Checkpointer) method(ctx context.Context, l Live) core.CheckpointMethod {
	_, forker := l.Harness().(core.Forker)
	canFork := forker && (c.opts.Hosts.Capabilities(ctx, l.Host()).Has(core.CapSessionFork) || hosts.Probe(ctx, l.Host()).Has(core.CapSessionFork))
	return core.CheckpointMethodFor(l.Preset(), canFork)
}

// forkStartTimeout bounds starting a fork (a harness process may take
// seconds to load a long conversation on a loaded machine); the reply
// then has the checkpoint timeout.
const forkStartTimeout = time.Minute

// startFork forks the live session for a checkpoint.
func startFork(ctx context.Context, l Live) (core.Fork, error) {
	ctx, cancel := context.WithTimeout(ctx, forkStartTimeout)
	defer cancel()
	fk, err := l.Harness().(core.Forker).Fork(ctx)
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
func (c *Checkpointer) askDraft(ctx context.Context, ask func(context.Context, string) (string, error), prompt string) (checkpoint.Draft, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	text, err := ask(ctx, prompt)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return checkpoint.Draft{}, core.E(core.CodeTimeout, fmt.Sprintf("no checkpoint reply within %s", c.opts.Timeout), err)
		}
		return checkpoint.Draft{}, err
	}
	d, err := checkpoint.ParseReply(text)
	if err != nil {
		return checkpoint.Draft{}, core.E(core.CodeSummary, "the checkpoint reply is unusable", err)
	}
	return d, nil
}

// failed records compaction.failed (entry and audit row) and returns the
// error to report.
func (c *Checkpointer) failed(ctx context.Context, l Live, sessionID string, reason checkpoint.Reason, attempt int, cause error) error {
	ctx = context.WithoutCancel(ctx)
	if _, err := l.Append(ctx, checkpoint.FailedEntry(reason, attempt, cause)); err != nil {
		return core.E(core.CodePersistence, "record the failed checkpoint", errors.Join(cause, err))
	}
	if err := c.opts.Store.AppendAudit(ctx, checkpoint.FailedAudit(sessionID, reason, attempt, cause)); err != nil {
		return core.E(core.CodePersistence, "audit the failed checkpoint", errors.Join(cause, err))
	}
	code := core.ErrorCode(cause)
	if code != core.CodeTimeout {
		code = core.CodeSummary
	}
	return core.E(code, "checkpoint failed", cause)
}

// commit writes, in one transaction, the checkpoint, its boundary, the
// branch.summary marker (the new head), the head's latest checkpoint and
// the audit row; with a live session l, after every event it reported and
// before any more.
func (c *Checkpointer) commit(ctx context.Context, l Live, sessionID string, cp checkpoint.Checkpoint, marker string, audit core.AuditRecord) ([]core.Entry, error) {
	if err := cp.Validate(); err != nil {
		return nil, core.E(core.CodeSummary, "the assembled checkpoint is invalid", err)
	}
	cpID := c.opts.IDs.New("e_")
	var out []core.Entry
	write := func() error {
		err := c.opts.Store.Update(ctx, func(w core.Writer) error {
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
			return core.E(core.CodeCommit, "commit the checkpoint", err)
		}
		// Told before any later event of the session is recorded.
		c.opts.Notifier.Announce(out...)
		return nil
	}
	var err error
	if l != nil {
		err = l.Commit(write)
	} else {
		err = write()
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// reconstruct rebuilds a checkpoint from the record (its window summary
// and newest entries) and the repository state of its cwd: for a session
// whose harness is not running, or (hot) a running one whose harness
// cannot fork, when the preset does not ask for the live thread.
func (c *Checkpointer) reconstruct(ctx context.Context, sess core.Session, win core.Window, reason checkpoint.Reason, hot bool) (Outcome, error) {
	status := ""
	if c.opts.RepoStatus != nil && sess.Cwd != "" {
		st, err := c.opts.RepoStatus(ctx, sess.Cwd)
		if err != nil {
			c.opts.Notifier.Log(2, fmt.Sprintf("session %s: no repository evidence from %s: %v", sess.ID, sess.Cwd, err))
		} else {
			status = st
		}
	}
	plan, err := c.planRetention(ctx, sess.ID, win)
	if err != nil {
		return Outcome{}, err
	}
	first, marker := plan.FirstRetainedEntryID, c.opts.IDs.New("e_")
	if first == "" {
		first = marker
	}
	in, err := c.recovery(ctx, sess.ID, win)
	if err != nil {
		return Outcome{}, err
	}
	in.Running = hot
	tokens := win.Tokens
	l := c.opts.Lives.Live(sess.ID)
	if hot && l != nil {
		tokens = tokensBefore(l, win)
	}
	rec, err := checkpoint.ReconstructFrom(in, status, checkpoint.Bookkeeping{SourceAgent: sess.ID,
		FirstRetainedEntryID: first, TokensBefore: tokens, Reason: reason})
	if err != nil {
		return Outcome{}, err
	}
	rec.Checkpoint.Method = core.CheckpointReconstructed
	entries, err := c.commit(ctx, l, sess.ID, rec.Checkpoint, marker, checkpoint.RecoveryAudit(sess.ID, rec))
	if err != nil {
		return Outcome{}, err
	}
	c.opts.Notifier.CheckpointSaved(peer.CheckpointSaved{SessionID: sess.ID, EntryID: entries[0].ID,
		Reason: reason, Provenance: rec.Checkpoint.Provenance, Method: core.CheckpointReconstructed, Hot: hot})
	return Outcome{EntryID: entries[0].ID, Provenance: rec.Checkpoint.Provenance, Reason: string(reason),
		Method: core.CheckpointReconstructed}, nil
}

// tokensBefore is the context size now: the gauge when there is one, else
// the sum of the token estimates since the last boundary.
func tokensBefore(l Live, win core.Window) int64 {
	if g := l.Gauge(); g != nil {
		return g.Used
	}
	return win.Tokens
}
