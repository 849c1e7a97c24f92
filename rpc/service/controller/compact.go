package controller

import (
	"context"
	"fmt"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
)

// Compaction is what session/compact did.
type Compaction struct {
	By           string // "harness" or "bridge"
	FocusApplied bool
	FocusNote    string
	EntryID      string
}

// Compact forwards a compaction command to the harness when it has one
// (Claude Code /compact, Codex thread/compact/start, OpenCode summarize, an
// ACP compact command) and otherwise falls back to a Bridge checkpoint with
// reason manual. A focus the command cannot take is reported as
// FocusApplied false with the reason, never dropped in silence.
func (c *Controller) Compact(ctx context.Context, sessionID, focus string) (Compaction, error) {
	sess, err := c.session(ctx, sessionID)
	if err != nil {
		return Compaction{}, err
	}
	h, err := c.opts.Hosts.Get(sess.Harness)
	if err != nil {
		return Compaction{}, err
	}
	if !c.opts.Hosts.Capabilities(ctx, h).Has(core.CapCompactCommand) {
		out, err := c.opts.Checkpointer.Checkpoint(ctx, sessionID, checkpointer.Request{Reason: checkpoint.ReasonManual, Focus: focus})
		if err != nil {
			return Compaction{}, err
		}
		res := Compaction{By: "bridge", EntryID: out.EntryID, FocusApplied: focus != ""}
		if focus != "" {
			res.FocusNote = "harness " + sess.Harness + " has no compaction command; the focus was given to the Bridge checkpoint request"
		}
		return res, nil
	}
	if err := c.opts.Checkpointer.CheckNotPending(ctx, sessionID); err != nil {
		return Compaction{}, err
	}
	l, err := c.opts.Sessions.EnsureLive(ctx, sess)
	if err != nil {
		return Compaction{}, err
	}
	comp, ok := l.Harness.(core.Compactor)
	if !ok {
		return Compaction{}, core.Errorf(core.CodeUnsupported, "harness %s advertised a compaction command but its session has none", sess.Harness)
	}
	if !l.Turn.TryLock() {
		return Compaction{}, core.Errorf(core.CodeBusy, "session %s is running a turn; compact after it ends", sessionID)
	}
	defer l.Turn.Unlock()
	before := l.LastCompact()
	res, err := comp.Compact(ctx, focus)
	l.Flush()
	if err != nil {
		return Compaction{}, core.HarnessFailed(sess.Harness, err)
	}
	out := Compaction{By: "harness", FocusApplied: focus != "" && res.FocusApplied, FocusNote: res.FocusNote}
	if focus != "" && !res.FocusApplied && out.FocusNote == "" {
		out.FocusNote = fmt.Sprintf("harness %s's compaction command takes no focus", sess.Harness)
	}
	if last := l.LastCompact(); last != before {
		out.EntryID = last
	}
	return out, nil
}
