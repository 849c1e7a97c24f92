package checkpoint

import (
	"fmt"

	"github.com/bridge-dev/bridge/core"
)

// TailInput is what ProjectTail reads of the record instead of the whole
// branch: the window summary, the checkpoint its boundary names, the
// entries retained from before the boundary and the newest entries after
// it.
type TailInput struct {
	// Window is the branch's summary (core.WindowReader); its boundary is
	// the one projected.
	Window core.Window
	// Checkpoint is the entry Window.BoundaryCheckpointID names.
	Checkpoint core.Entry
	// Before is the branch from the checkpoint's firstRetainedEntryId up
	// to the boundary, inclusive, oldest first, when that entry comes
	// before the boundary; nil when the retained entries start after it.
	Before []core.Entry
	// Tail are the newest entries after the boundary, oldest first;
	// Complete says Tail starts right after the boundary.
	Tail     []core.Entry
	Complete bool
}

// ProjectTail is Project for a caller that reads the newest entries of the
// branch, not all of it. The retained entries are the conversation of
// Before followed by the entries of Tail that are neither bookkeeping nor
// inside a checkpoint exchange the window says was closed (Window.Dropped);
// the budget cut and the tool-pair widening work on that list from its
// newest end. more is true when Tail is not Complete and the cut did not
// fall inside it (or a kept tool result's call is older than Tail): read a
// longer tail and call again. Omitted counts the entries not read as well.
//
// The checkpoint must be valid (ParsePayload) and the window's boundary
// must name it (Window.BoundaryCheckpointSeen); otherwise the error is
// CodeNotFound wrapping ErrNoCheckpoint and the caller uses Project on the
// branch, which looks further back.
func ProjectTail(in TailInput, opt ProjectOptions) (p Projection, more bool, err error) {
	w := in.Window
	if w.BoundaryID == "" {
		return Projection{}, false, core.E(core.CodeNotFound, "the active branch has no checkpoint", ErrNoCheckpoint)
	}
	if !w.BoundaryCheckpointSeen || in.Checkpoint.ID != w.BoundaryCheckpointID || in.Checkpoint.Kind != core.KindCheckpoint {
		return Projection{}, false, core.E(core.CodeNotFound, fmt.Sprintf("checkpoint entry %s of boundary %s is not the checkpoint it commits",
			w.BoundaryCheckpointID, w.BoundaryID), ErrNoCheckpoint)
	}
	cp, err := ParsePayload(in.Checkpoint.Payload)
	if err != nil {
		return Projection{}, false, core.E(core.CodeNotFound, fmt.Sprintf("checkpoint entry %s is invalid: %v", in.Checkpoint.ID, err), ErrNoCheckpoint)
	}
	p = Projection{BoundaryEntryID: w.BoundaryID, CheckpointEntryID: in.Checkpoint.ID, Checkpoint: cp}
	more = tailRetained(&p, in, opt)
	return p, more, nil
}

// ProjectForkTail is ProjectFork of the active branch (a fork at the head)
// read like ProjectTail: with a boundary, ProjectTail's projection; with
// none, the whole conversation under the budget, from the newest entries
// (Before is not used). Either way tool calls whose result is not in the
// projection are dropped. An unusable checkpoint is ProjectTail's error:
// the caller uses ProjectFork on the branch.
func ProjectForkTail(in TailInput, opt ProjectOptions) (p Projection, more bool, err error) {
	if in.Window.BoundaryID != "" {
		p, more, err = ProjectTail(in, opt)
	} else {
		in.Before = nil
		more = tailRetained(&p, in, opt)
	}
	if err != nil || more {
		return Projection{}, more, err
	}
	p.Retained = closedTools(p.Retained)
	return p, false, nil
}

// tailRetained fills p's retained entries, omitted count, widening, model
// and effort from in (see ProjectTail); it reports more when the tail is
// too short to know them.
func tailRetained(p *Projection, in TailInput, opt ProjectOptions) (more bool) {
	w := in.Window
	before := conversation(in.Before)
	var after []core.Entry
	for _, e := range in.Tail {
		if e.Seq > w.BoundarySeq && !e.Kind.Bookkeeping() && !droppedBy(w, e.Seq) {
			after = append(after, e)
		}
	}
	// unread counts the conversation entries after the boundary that are
	// older than Tail; with some, only after is known of the list, and
	// offset entries of it come before after[0].
	unread := int(w.Conversation) - len(after)
	partial := !in.Complete && unread > 0
	retained, offset := after, 0
	if partial {
		offset = len(before) + unread
	} else {
		retained = append(append([]core.Entry(nil), before...), after...)
	}
	cut := budgetCut(retained, opt.Budget)
	if partial && cut == 0 {
		return true
	}
	if cut > 0 {
		moved, open := keepToolPairsOpen(retained, 0, cut)
		if partial && open {
			return true
		}
		if moved < cut {
			p.Widened = true
			cut = moved
		}
	}
	p.Omitted = offset + cut
	p.Retained = retained[cut:]
	p.Model, p.Effort = opt.Model, opt.Effort
	if p.Model == "" {
		p.Model = w.Model
	}
	if p.Effort == "" {
		p.Effort = w.Effort
	}
	return false
}

func droppedBy(w core.Window, seq int64) bool {
	for _, s := range w.Dropped {
		if s.Contains(seq) {
			return true
		}
	}
	return false
}
