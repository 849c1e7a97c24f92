package library

import (
	"context"
	"fmt"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// Sessions is the live sessions as a fork uses them: it creates the new
// session, records its origin and hands it the projection as its first
// turn.
type Sessions interface {
	// Create starts and records a new harness session (session/create).
	Create(ctx context.Context, p schema.SessionCreateParams) (core.Session, error)
	// Append records entries in a session and tells the client.
	Append(ctx context.Context, sessionID string, es ...core.NewEntry) ([]core.Entry, error)
	// Running says whether the session's harness runs in this process.
	Running(sessionID string) bool
	// Hold takes the running session's turn when it is free (false: busy
	// or not running); the caller releases it.
	Hold(sessionID string) (Turn, bool)
}

// Turn is a running session's turn, held.
type Turn interface {
	// Run runs one turn of content and waits for it to end.
	Run(ctx context.Context, content []core.Content) error
	// Release gives the turn back.
	Release()
}

// Projector reads the projection a fork at a session's head starts from
// (the checkpointer's, through the window summary).
type Projector interface {
	ForkProjection(ctx context.Context, sessionID string, opt checkpoint.ProjectOptions) (checkpoint.Projection, error)
}

// Fork is session/fork: a new session, on any harness, that starts from the
// source's projection at an entry (the checkpoint machinery's: the newest
// checkpoint up to that entry and what follows it, or the whole
// conversation when there is none; a tool call is never split). The new
// session records session.forked, naming its origin, before its first
// prompt, which is the rendered projection. Nothing is written to the source.
func (s *Library) Fork(ctx context.Context, src core.Session, p schema.SessionForkParams) (schema.SessionForkResult, error) {
	opt := checkpoint.ProjectOptions{Model: src.Model, Effort: src.Effort,
		Budget: checkpoint.RetainPolicy{TokenBudget: checkpoint.ProjectionTokens}}
	at, proj, err := s.forkPoint(ctx, src, p.EntryID, opt)
	if err != nil {
		return schema.SessionForkResult{}, err
	}
	harness, preset, model, effort := p.Target.Harness, p.Target.Preset, p.Target.Model, p.Target.Effort
	if harness == "" {
		harness = src.Harness
	}
	if harness == src.Harness {
		// Within one harness the source's preset, model and effort carry
		// over; across harnesses their names mean nothing to the target.
		if preset == "" {
			preset = src.Preset
		}
		if model == "" {
			model = src.Model
		}
		if effort == "" {
			effort = src.Effort
		}
	}
	cwd := p.Cwd
	if cwd == "" {
		cwd = src.Cwd
	}
	progress := peer.ProgressFrom(ctx)
	progress(0, 3, "projecting "+src.ID+" at "+at.ID)
	title := src.Title
	if title == "" {
		title = src.ID
	}
	progress(1, 3, "starting "+harness)
	target, err := s.opts.Sessions.Create(ctx, schema.SessionCreateParams{Harness: harness, Cwd: cwd, Preset: preset, Model: model,
		Effort: effort, Title: "fork of " + title})
	if err != nil {
		return schema.SessionForkResult{}, fmt.Errorf("start the fork: %w", err)
	}
	out := schema.SessionForkResult{SessionID: target.ID, Harness: target.Harness, NativeSessionID: target.NativeSessionID,
		Origin: schema.ForkOrigin{SessionID: src.ID, EntryID: at.ID, Harness: src.Harness}, ProjectedEntries: len(proj.Retained)}
	origin := core.SessionForkedPayload{SourceSessionID: src.ID, SourceEntryID: at.ID, SourceHarness: src.Harness,
		ProjectedEntries: len(proj.Retained), CheckpointEntryID: proj.CheckpointEntryID}
	if _, err := s.opts.Sessions.Append(ctx, target.ID, core.NewEntry{Kind: core.KindSessionForked, Payload: core.Payload(origin)}); err != nil {
		return out, err
	}
	if !s.opts.Sessions.Running(target.ID) {
		return out, core.Errorf(core.CodeHarness, "the fork %s stopped right after it started", target.ID)
	}
	turn, ok := s.opts.Sessions.Hold(target.ID)
	if !ok {
		return out, core.Errorf(core.CodeBusy, "the fork %s is busy", target.ID)
	}
	defer turn.Release()
	progress(2, 3, "handing the conversation to "+harness)
	text := checkpoint.RenderFork(checkpoint.ForkSource{SessionID: src.ID, EntryID: at.ID, Harness: src.Harness, Title: src.Title}, proj)
	if err := turn.Run(ctx, []core.Content{{Type: "text", Text: text}}); err != nil {
		return out, fmt.Errorf("hand the projection to the fork %s: %w", target.ID, err)
	}
	progress(3, 3, "forked")
	return out, nil
}

// forkPoint returns the entry a fork starts at and the projection it
// starts from: at the head (entryID "") read through the window summary
// and the newest entries; at an older entry, from the path to it.
func (s *Library) forkPoint(ctx context.Context, src core.Session, entryID string, opt checkpoint.ProjectOptions) (core.Entry, checkpoint.Projection, error) {
	if entryID == "" {
		if src.HeadID == "" {
			return core.Entry{}, checkpoint.Projection{}, core.InvalidField("sessionId", "session %s has no entries to fork from", src.ID)
		}
		at, err := s.opts.Store.GetEntry(ctx, src.HeadID)
		if err != nil {
			return core.Entry{}, checkpoint.Projection{}, err
		}
		proj, err := s.opts.Projector.ForkProjection(ctx, src.ID, opt)
		return at, proj, err
	}
	path, err := s.pathTo(ctx, src, entryID)
	if err != nil {
		return core.Entry{}, checkpoint.Projection{}, err
	}
	return path[len(path)-1], checkpoint.ProjectFork(path, opt), nil
}

// pathTo returns the entries from the root of src's tree to entryID
// (inclusive).
func (s *Library) pathTo(ctx context.Context, src core.Session, entryID string) ([]core.Entry, error) {
	e, err := s.opts.Store.GetEntry(ctx, entryID)
	if core.ErrorCode(err) == core.CodeNotFound {
		return nil, core.InvalidField("entryId", "entry %q does not exist", entryID)
	}
	if err != nil {
		return nil, err
	}
	if e.SessionID != src.ID {
		return nil, core.InvalidField("entryId", "entry %s belongs to session %s, not %s", entryID, e.SessionID, src.ID)
	}
	dm, ok := s.opts.Store.(core.Dumper)
	if !ok {
		return nil, core.Errorf(core.CodeUnsupported, "this record cannot export or restore whole sessions")
	}
	d, err := dm.Dump(ctx, src.ID)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]core.Entry, len(d.Entries))
	for _, x := range d.Entries {
		byID[x.ID] = x
	}
	var rev []core.Entry
	for id := entryID; id != ""; {
		x, ok := byID[id]
		if !ok || len(rev) > len(d.Entries) {
			return nil, core.Errorf(core.CodeCorrupt, "session %s: the path to entry %s is broken at %q", src.ID, entryID, id)
		}
		rev = append(rev, x)
		id = x.ParentID
	}
	path := make([]core.Entry, len(rev))
	for i, x := range rev {
		path[len(rev)-1-i] = x
	}
	return path, nil
}
