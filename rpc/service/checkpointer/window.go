package checkpointer

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
)

// The live paths (checkpoints, compaction, restoration, the controller)
// read a session through its window summary (core.Window: one row the
// store keeps on append) and its newest entries (History pages, grown
// until the answer cannot change), never the whole branch.

// newest reads the newest entries of the active branch, oldest first: a
// History page of msgs messages, then four times more each time enough
// says it needs more, until the page reaches back to the entry with seq
// floor (the last boundary: nothing older matters; 0 for none) or to the
// root. complete tells enough that nothing older can matter.
func (c *Checkpointer) newest(ctx context.Context, sessionID string, floor int64, msgs int, enough func(page []core.Entry, complete bool) bool) error {
	for {
		page, more, err := c.opts.Store.History(ctx, sessionID, 0, msgs)
		if err != nil {
			return err
		}
		complete := !more || (len(page) > 0 && page[0].Seq <= floor)
		if enough(page, complete) || complete {
			return nil
		}
		msgs *= 4
	}
}

// planRetention picks where the retained tail of a checkpoint about to be
// written starts (checkpoint.PlanRetention) from the newest entries.
func (c *Checkpointer) planRetention(ctx context.Context, sessionID string, win core.Window) (checkpoint.RetentionPlan, error) {
	var plan checkpoint.RetentionPlan
	err := c.newest(ctx, sessionID, win.BoundarySeq, retainPolicy.KeepMessages+2, func(page []core.Entry, complete bool) bool {
		var more bool
		plan, more = checkpoint.PlanRetentionTail(page, complete, retainPolicy)
		return !more
	})
	return plan, err
}

// recovery reads what a reconstruction needs: the window's evidence and
// open calls, the newest user goal (one entry), the newest assistant
// messages (the newest entries) and the checkpoint the last boundary
// committed (one entry). Only when that checkpoint is unusable is the
// branch read, to find an older valid one.
func (c *Checkpointer) recovery(ctx context.Context, sessionID string, win core.Window) (checkpoint.Recovery, error) {
	in := checkpoint.Recovery{Evidence: checkpoint.EvidenceOf(win), Activity: checkpoint.ActivityOf(win)}
	if win.LastUserID != "" {
		e, err := c.opts.Store.GetEntry(ctx, win.LastUserID)
		if err != nil {
			return in, err
		}
		in.Goal = strings.TrimSpace(textOf(e.Payload))
	}
	err := c.newest(ctx, sessionID, win.BoundarySeq, 2*checkpoint.RecentAssistant, func(page []core.Entry, _ bool) bool {
		in.Assistant = checkpoint.AssistantTexts(after(page, win.BoundarySeq))
		return len(in.Assistant) >= checkpoint.RecentAssistant
	})
	if err != nil {
		return in, err
	}
	if win.BoundaryID == "" {
		return in, nil
	}
	if cp, _, err := c.boundaryCheckpoint(ctx, win); err == nil {
		in.Earlier = &cp
		return in, nil
	}
	branch, err := c.opts.Store.ActiveBranch(ctx, sessionID)
	if err != nil {
		return in, err
	}
	if p, err := checkpoint.Project(branch, checkpoint.ProjectOptions{}); err == nil {
		in.Earlier = &p.Checkpoint
	}
	return in, nil
}

// after returns the entries of page with seq > floor.
func after(page []core.Entry, floor int64) []core.Entry {
	for i, e := range page {
		if e.Seq > floor {
			return page[i:]
		}
	}
	return nil
}

// boundaryCheckpoint reads and checks the checkpoint the window's boundary
// commits.
func (c *Checkpointer) boundaryCheckpoint(ctx context.Context, win core.Window) (checkpoint.Checkpoint, core.Entry, error) {
	if !win.BoundaryCheckpointSeen {
		return checkpoint.Checkpoint{}, core.Entry{}, core.Errorf(core.CodeNotFound, "boundary %s names no checkpoint committed with it", win.BoundaryID)
	}
	e, err := c.opts.Store.GetEntry(ctx, win.BoundaryCheckpointID)
	if err != nil {
		return checkpoint.Checkpoint{}, core.Entry{}, err
	}
	cp, err := checkpoint.ParsePayload(e.Payload)
	return cp, e, err
}

// Projection is the restoration projection of sess (checkpoint.Project's)
// read through the window: the checkpoint its last boundary commits, the
// entries retained from before the boundary, and the newest entries after
// it until the token budget is filled. A boundary whose checkpoint is
// unusable (or an unusual layout) falls back to Project on the branch,
// which looks for an older one.
func (c *Checkpointer) Projection(ctx context.Context, sess core.Session, opt checkpoint.ProjectOptions) (checkpoint.Projection, error) {
	return c.projectTail(ctx, sess.ID, opt, false)
}

// ForkProjection is the projection a fork at the head starts from
// (checkpoint.ProjectFork's), read the same way.
func (c *Checkpointer) ForkProjection(ctx context.Context, sessionID string, opt checkpoint.ProjectOptions) (checkpoint.Projection, error) {
	return c.projectTail(ctx, sessionID, opt, true)
}

func (c *Checkpointer) projectTail(ctx context.Context, sessionID string, opt checkpoint.ProjectOptions, fork bool) (checkpoint.Projection, error) {
	win, err := c.opts.Store.Window(ctx, sessionID)
	if err != nil {
		return checkpoint.Projection{}, err
	}
	if win.BoundaryID == "" && !fork {
		return checkpoint.Project(nil, opt)
	}
	in := checkpoint.TailInput{Window: win}
	usable := true
	if win.BoundaryID != "" {
		var cp checkpoint.Checkpoint
		cp, in.Checkpoint, err = c.boundaryCheckpoint(ctx, win)
		usable = err == nil
		if usable && cp.FirstRetainedEntryID != "" {
			in.Before, usable, err = c.retainedBefore(ctx, sessionID, win, cp.FirstRetainedEntryID)
			if err != nil {
				return checkpoint.Projection{}, err
			}
		}
	}
	if !usable {
		branch, err := c.opts.Store.ActiveBranch(ctx, sessionID)
		if err != nil {
			return checkpoint.Projection{}, err
		}
		if fork {
			return checkpoint.ProjectFork(branch, opt), nil
		}
		return checkpoint.Project(branch, opt)
	}
	project := checkpoint.ProjectTail
	if fork {
		project = checkpoint.ProjectForkTail
	}
	var p checkpoint.Projection
	var perr error
	err = c.newest(ctx, sessionID, win.BoundarySeq, 64, func(page []core.Entry, complete bool) bool {
		in.Tail, in.Complete = page, complete
		var more bool
		p, more, perr = project(in, opt)
		return perr != nil || !more
	})
	if err != nil {
		return checkpoint.Projection{}, err
	}
	return p, perr
}

// retainedBefore returns the branch from first up to the window's boundary
// (inclusive) when first is an entry before it; nil when first is the
// marker the commit wrote after the boundary or is not on the branch.
// usable is false for any other layout.
func (c *Checkpointer) retainedBefore(ctx context.Context, sessionID string, win core.Window, first string) (es []core.Entry, usable bool, err error) {
	fe, err := c.opts.Store.GetEntry(ctx, first)
	switch {
	case core.ErrorCode(err) == core.CodeNotFound:
		return nil, true, nil // not on the branch: retained from the boundary on
	case err != nil:
		return nil, false, err
	case fe.SessionID != sessionID:
		return nil, true, nil
	case fe.Seq > win.BoundarySeq:
		return nil, fe.Kind == core.KindBranchSummary && fe.ParentID == win.BoundaryID, nil
	}
	for msgs := 16; ; msgs *= 4 {
		page, more, err := c.opts.Store.History(ctx, sessionID, win.BoundarySeq+1, msgs)
		if err != nil {
			return nil, false, err
		}
		for i, e := range page {
			if e.ID == first {
				return page[i:], true, nil
			}
		}
		if !more || (len(page) > 0 && page[0].Seq < fe.Seq) {
			return nil, true, nil // not on the active branch
		}
	}
}

// textOf is the text member of a message payload ("" when it has none).
func textOf(payload []byte) string {
	var p struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(payload, &p)
	return p.Text
}
