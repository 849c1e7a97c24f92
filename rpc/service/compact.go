package service

import (
	"context"
	"fmt"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
)

// compact forwards a compaction command to the harness when it has one
// (Claude Code /compact, Codex thread/compact/start, OpenCode summarize, an
// ACP compact command) and otherwise falls back to a Bridge checkpoint with
// reason manual. A focus the command cannot take is reported as
// focusApplied false with the reason, never dropped in silence.
func (s *Service) compact(ctx context.Context, sessionID, focus string) (CompactOutcome, error) {
	sess, err := s.session(ctx, sessionID)
	if err != nil {
		return CompactOutcome{}, err
	}
	h, err := s.hosts.Get(sess.Harness)
	if err != nil {
		return CompactOutcome{}, err
	}
	p := s.hosts.Capabilities(ctx, h)
	if !p.Has(core.CapCompactCommand) {
		out, err := s.ckpt.Checkpoint(ctx, sessionID, checkpointer.Request{Reason: checkpoint.ReasonManual, Focus: focus})
		if err != nil {
			return CompactOutcome{}, err
		}
		res := CompactOutcome{By: "bridge", EntryID: out.EntryID, FocusApplied: focus != ""}
		if focus != "" {
			res.FocusNote = "harness " + sess.Harness + " has no compaction command; the focus was given to the Bridge checkpoint request"
		}
		return res, nil
	}
	if err := s.ckpt.CheckNotPending(ctx, sessionID); err != nil {
		return CompactOutcome{}, err
	}
	l, err := s.ensureLive(ctx, sess)
	if err != nil {
		return CompactOutcome{}, err
	}
	comp, ok := l.Harness.(core.Compactor)
	if !ok {
		return CompactOutcome{}, core.Errorf(core.CodeUnsupported, "harness %s advertised a compaction command but its session has none", sess.Harness)
	}
	if !l.Turn.TryLock() {
		return CompactOutcome{}, core.Errorf(core.CodeBusy, "session %s is running a turn; compact after it ends", sessionID)
	}
	defer l.Turn.Unlock()
	before := l.LastCompact()
	res, err := comp.Compact(ctx, focus)
	l.Flush()
	if err != nil {
		return CompactOutcome{}, wrapHarness(sess.Harness, err)
	}
	out := CompactOutcome{By: "harness", FocusApplied: focus != "" && res.FocusApplied, FocusNote: res.FocusNote}
	if focus != "" && !res.FocusApplied && out.FocusNote == "" {
		out.FocusNote = fmt.Sprintf("harness %s's compaction command takes no focus", sess.Harness)
	}
	if last := l.LastCompact(); last != before {
		out.EntryID = last
	}
	return out, nil
}
