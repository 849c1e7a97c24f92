package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// Cancel interrupts the running turn. Cancelling an idle session is not an
// error.
func (s *Sessions) Cancel(ctx context.Context, sessionID string) error {
	if _, err := s.Session(ctx, sessionID); err != nil {
		return err
	}
	l := s.Live(sessionID)
	if l == nil {
		return nil
	}
	// Open permission requests get the policy's answer (and the client a
	// $/cancelRequest) before the harness is interrupted.
	l.CancelApprovals()
	// The harness is stopped first; then what it already reported stops
	// being announced, and the prompt is answered without waiting for it.
	err := l.Harness.Cancel(ctx)
	l.CancelTurn()
	if err != nil {
		return core.HarnessFailed(l.Host.Harness(), err)
	}
	return nil
}

// Rename sets the session's title in the record and, where the harness can
// rename, on the harness side too.
func (s *Sessions) Rename(ctx context.Context, sessionID, title string) error {
	if strings.TrimSpace(title) == "" {
		return core.InvalidField("title", "title must not be empty")
	}
	if _, err := s.Session(ctx, sessionID); err != nil {
		return err
	}
	if _, err := s.opts.Store.PatchSession(ctx, sessionID, core.SessionPatch{Title: core.Ptr(title)}); err != nil {
		return err
	}
	if l := s.Live(sessionID); l != nil {
		if err := l.Harness.Rename(ctx, title); err != nil && !errors.Is(err, core.ErrUnsupported) {
			s.opts.Notifier.Log(2, fmt.Sprintf("session %s: renamed in Bridge; the harness refused: %v", sessionID, err))
		}
	}
	return nil
}

// Status is where sess stands as this service knows it: live when its
// harness process runs here, else what the newest status entry recorded
// (suspended by Bridge, or stopped: ended), else idle. It reads nothing.
func (s *Sessions) Status(sess core.Session) schema.SessionStatus {
	if s.Live(sess.ID) != nil {
		return schema.StatusLive
	}
	switch sess.LastStatus {
	case "suspended":
		return schema.StatusSuspended
	case "stopped":
		return schema.StatusEnded
	}
	return schema.StatusIdle
}

// Archive stops the session's harness and hides it from the default list.
// The record is kept.
func (s *Sessions) Archive(ctx context.Context, sessionID string) error {
	sess, err := s.Session(ctx, sessionID)
	if err != nil {
		return err
	}
	if l := s.Live(sessionID); l != nil {
		if err := l.Close(ctx); err != nil {
			s.opts.Notifier.Log(2, fmt.Sprintf("session %s: stopping the harness: %v", sessionID, err))
		}
	}
	if h, ok := s.opts.Hosts.Lookup(sess.Harness); ok && sess.NativeSessionID != "" {
		if err := h.ArchiveSession(ctx, sess.NativeSessionID); err != nil && !errors.Is(err, core.ErrUnsupported) {
			s.opts.Notifier.Log(2, fmt.Sprintf("session %s: archived in Bridge; the harness refused: %v", sessionID, err))
		}
	}
	if err := s.opts.Workspace.Archive(ctx, sessionID); err != nil {
		s.opts.Notifier.Log(2, fmt.Sprintf("session %s: archived; removing its worktree failed: %v", sessionID, err))
	}
	_, err = s.opts.Store.PatchSession(ctx, sessionID, core.SessionPatch{Archived: core.Ptr(true)})
	return err
}

// History pages the session's record backwards.
func (s *Sessions) History(ctx context.Context, sessionID string, beforeSeq int64, maxMessages int) ([]core.Entry, bool, error) {
	if beforeSeq < 0 {
		return nil, false, core.Errorf(core.CodeInvalid, "beforeSeq must not be negative")
	}
	if maxMessages < 0 {
		return nil, false, core.Errorf(core.CodeInvalid, "maxMessages must not be negative")
	}
	if sessionID == "" {
		return nil, false, core.Errorf(core.CodeInvalid, "sessionId is required")
	}
	// The store reports an unknown session as not_found.
	return s.opts.Store.History(ctx, sessionID, beforeSeq, maxMessages)
}

// HistoryAfter pages the session's record forwards from afterSeq.
func (s *Sessions) HistoryAfter(ctx context.Context, sessionID string, afterSeq int64, maxMessages int) ([]core.Entry, bool, error) {
	if afterSeq < 0 {
		return nil, false, core.InvalidField("afterSeq", "afterSeq must not be negative")
	}
	if maxMessages < 0 {
		return nil, false, core.InvalidField("maxMessages", "maxMessages must not be negative")
	}
	if sessionID == "" {
		return nil, false, core.InvalidField("sessionId", "sessionId is required")
	}
	return s.opts.Store.HistoryAfter(ctx, sessionID, afterSeq, maxMessages)
}

// HistoryAround reads the page of the session's record around entry
// entryID. An unknown entry is not_found; one of another session or off
// the active branch is invalid, naming the field around.
func (s *Sessions) HistoryAround(ctx context.Context, sessionID, entryID string, maxMessages int) (entries []core.Entry, hasMore, hasNewer bool, err error) {
	if maxMessages < 0 {
		return nil, false, false, core.InvalidField("maxMessages", "maxMessages must not be negative")
	}
	if sessionID == "" {
		return nil, false, false, core.InvalidField("sessionId", "sessionId is required")
	}
	return s.opts.Store.HistoryAround(ctx, sessionID, entryID, maxMessages)
}
