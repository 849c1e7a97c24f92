package service

import (
	"context"
	"slices"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
	"github.com/bridge-dev/bridge/rpc/service/workspace"
	"github.com/bridge-dev/bridge/schema"
)

// The client requests of schema.Methods, one method each, in the contract's
// own types. Each passes every params field on (a test reads these bodies
// and fails when one is not used); the work is in the unexported methods.

var _ schema.Backend = (*Service)(nil)

// SessionList pages the recorded sessions, newest first.
func (s *Service) SessionList(ctx context.Context, p schema.SessionListParams) (schema.SessionListResult, error) {
	if p.Limit < 0 {
		return schema.SessionListResult{}, invalidField("limit", "limit must not be negative")
	}
	items, next, err := s.opts.Store.ListSessions(ctx, core.ListQuery{Cursor: p.Cursor, Limit: p.Limit,
		IncludeArchived: p.IncludeArchived, Harness: p.Harness})
	if err != nil {
		return schema.SessionListResult{}, err
	}
	out := schema.SessionListResult{Items: make([]schema.SessionListItem, 0, len(items)), NextCursor: next}
	repos, err := s.ws.Repos(ctx, items)
	if err != nil {
		return schema.SessionListResult{}, err
	}
	for _, x := range items {
		it := schema.SessionListItem{SessionID: x.ID, Harness: x.Harness, Title: x.Title, Cwd: x.Cwd,
			Archived: x.Archived, UpdatedAt: x.UpdatedAt, CreatedAt: x.CreatedAt, Preset: x.Preset, Model: x.Model,
			NativeSessionID: x.NativeSessionID, RestoreMode: schema.RestoreMode(x.RestoreMode), Status: s.sess.Status(x)}
		if r, ok := repos[x.ID]; ok {
			it.Branch = r.Branch
			if !r.Removed {
				it.Worktree = r.Worktree
			}
		}
		out.Items = append(out.Items, it)
	}
	return out, nil
}

// SessionCreate starts a new harness session and records it.
func (s *Service) SessionCreate(ctx context.Context, p schema.SessionCreateParams) (schema.SessionCreateResult, error) {
	sess, err := s.sess.Create(ctx, p)
	if err != nil {
		return schema.SessionCreateResult{}, err
	}
	out := schema.SessionCreateResult{SessionID: sess.ID, Harness: sess.Harness, NativeSessionID: sess.NativeSessionID}
	if r, ok, err := s.ws.Repo(ctx, sess.ID); err == nil && ok {
		out.Repo = workspace.Wire(r)
	}
	return out, nil
}

// SessionPrompt records the user's message and runs one turn: at once, or
// after the turns before it when one runs (or, with steer, inside it).
func (s *Service) SessionPrompt(ctx context.Context, p schema.SessionPromptParams) (schema.SessionPromptResult, error) {
	return s.sess.Prompt(ctx, p, slices.Clone(p.Content))
}

// SessionCancel interrupts the running turn; an idle session is not an
// error.
func (s *Service) SessionCancel(ctx context.Context, p schema.SessionCancelParams) (schema.SessionCancelResult, error) {
	if p.ClearQueue {
		s.queues.Withdraw(p.SessionID, "")
	}
	return schema.SessionCancelResult{}, s.sess.Cancel(ctx, p.SessionID)
}

// SessionRename sets the session's title.
func (s *Service) SessionRename(ctx context.Context, p schema.SessionRenameParams) (schema.SessionRenameResult, error) {
	if err := s.sess.Rename(ctx, p.SessionID, p.Title); err != nil {
		return schema.SessionRenameResult{}, err
	}
	s.sessionChanged(ctx, p.SessionID)
	return schema.SessionRenameResult{}, nil
}

// SessionArchive stops the session's harness and hides it from the default
// list.
func (s *Service) SessionArchive(ctx context.Context, p schema.SessionArchiveParams) (schema.SessionArchiveResult, error) {
	if err := s.sess.Archive(ctx, p.SessionID); err != nil {
		return schema.SessionArchiveResult{}, err
	}
	s.sessionChanged(ctx, p.SessionID)
	return schema.SessionArchiveResult{}, nil
}

// SessionHistory pages the session's record along its active branch:
// backwards (from the head or beforeSeq), forwards (afterSeq) or around an
// entry (around); one direction per page.
func (s *Service) SessionHistory(ctx context.Context, p schema.SessionHistoryParams) (schema.SessionHistoryResult, error) {
	var before int64
	if p.BeforeSeq != nil {
		if *p.BeforeSeq <= 0 {
			return schema.SessionHistoryResult{}, invalidField("beforeSeq", "beforeSeq must be positive")
		}
		before = *p.BeforeSeq
	}
	if p.MaxMessages < 0 {
		return schema.SessionHistoryResult{}, invalidField("maxMessages", "maxMessages must not be negative")
	}
	var given []string
	for _, g := range []struct {
		name string
		set  bool
	}{{"beforeSeq", p.BeforeSeq != nil}, {"afterSeq", p.AfterSeq != nil}, {"around", p.Around != ""}} {
		if g.set {
			given = append(given, g.name)
		}
	}
	if len(given) > 1 {
		return schema.SessionHistoryResult{}, invalidField(given[1],
			"%s and %s cannot be given together: a page is read backwards (beforeSeq), forwards (afterSeq) or around an entry (around)", given[0], given[1])
	}
	var (
		entries []core.Entry
		more    bool
		newer   *bool
		err     error
	)
	switch {
	case p.Around != "":
		var n bool
		entries, more, n, err = s.sess.HistoryAround(ctx, p.SessionID, p.Around, p.MaxMessages)
		newer = &n
	case p.AfterSeq != nil:
		var n bool
		entries, n, err = s.sess.HistoryAfter(ctx, p.SessionID, *p.AfterSeq, p.MaxMessages)
		newer = &n
		more = len(entries) > 0 && entries[0].ParentID != ""
	default:
		entries, more, err = s.sess.History(ctx, p.SessionID, before, p.MaxMessages)
	}
	if err != nil {
		return schema.SessionHistoryResult{}, err
	}
	out := schema.SessionHistoryResult{Entries: make([]schema.Entry, len(entries)), HasMore: more, HasNewer: newer}
	for i, e := range entries {
		out.Entries[i] = peer.WireEntry(e)
	}
	return out, nil
}

// SessionResume brings a session back and reports how.
func (s *Service) SessionResume(ctx context.Context, p schema.SessionResumeParams) (schema.SessionResumeResult, error) {
	if p.Mode != "" && p.Mode != schema.ResumeFresh {
		return schema.SessionResumeResult{}, invalidField("mode", "mode %q is not \"fresh\"", p.Mode)
	}
	r, err := s.sess.Resume(ctx, p.SessionID, p.Mode == schema.ResumeFresh)
	if err != nil {
		return schema.SessionResumeResult{}, err
	}
	// The result carries what session/restored says (the same members).
	return schema.SessionResumeResult(r), nil
}

// SessionCompact forwards a compaction command or falls back to a Bridge
// checkpoint.
func (s *Service) SessionCompact(ctx context.Context, p schema.SessionCompactParams) (schema.SessionCompactResult, error) {
	r, err := s.ctl.Compact(ctx, p.SessionID, p.Focus)
	if err != nil {
		return schema.SessionCompactResult{}, err
	}
	return schema.SessionCompactResult{By: schema.CompactedBy(r.By), FocusApplied: r.FocusApplied, FocusNote: r.FocusNote,
		EntryID: r.EntryID}, nil
}

// SessionCheckpoint writes a Bridge checkpoint of the session now.
func (s *Service) SessionCheckpoint(ctx context.Context, p schema.SessionCheckpointParams) (schema.SessionCheckpointResult, error) {
	reason := checkpoint.Reason(p.Reason)
	if reason == "" {
		reason = checkpoint.ReasonManual
	}
	if !reason.Known() {
		return schema.SessionCheckpointResult{}, invalidField("reason", "reason %q is not one of %v", p.Reason, checkpoint.Reasons)
	}
	r, err := s.ckpt.Checkpoint(ctx, p.SessionID, checkpointer.Request{Reason: reason})
	if err != nil {
		return schema.SessionCheckpointResult{}, err
	}
	return schema.SessionCheckpointResult{EntryID: r.EntryID, Provenance: schema.Provenance(r.Provenance),
		Reason: schema.CheckpointReason(r.Reason), Method: schema.CheckpointMethod(r.Method), ForkUsage: r.ForkUsage}, nil
}

// invalidField is an invalid-input error naming the params field at fault
// (data.field on the wire).
func invalidField(field, format string, args ...any) *core.Error {
	return core.InvalidField(field, format, args...)
}
