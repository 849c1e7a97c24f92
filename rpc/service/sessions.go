package service

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/bridge-dev/bridge/rpc/service/attach"
	"github.com/bridge-dev/bridge/rpc/service/live"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// create starts a new harness session and records it. Nothing is recorded
// when the harness cannot be started.
func (s *Service) create(ctx context.Context, p schema.SessionCreateParams) (core.Session, error) {
	if p.Harness == "" {
		return core.Session{}, invalidField("harness", "harness is required")
	}
	if p.Cwd == "" {
		return core.Session{}, invalidField("cwd", "cwd is required")
	}
	h, err := s.hosts.Get(p.Harness)
	if err != nil {
		return core.Session{}, err
	}
	if err := s.hosts.Require(ctx, h, "session/create", core.CapSessionCreate, core.CapSessionPrompt); err != nil {
		return core.Session{}, err
	}
	preset, err := s.preset(ctx, h, p.Preset)
	if err != nil {
		return core.Session{}, err
	}
	model, effort := p.Model, p.Effort
	if model == "" {
		model = preset.Model
	}
	if effort == "" {
		effort = preset.Effort
	}
	sess := core.Session{ID: s.opts.IDs.New("s_"), Harness: p.Harness, Cwd: p.Cwd, Title: p.Title,
		Preset: preset.Name, Model: model, Effort: effort}
	repo, cwd, err := s.ws.Start(ctx, sess.ID, p.Cwd, p.Worktree || preset.Worktree) // rpc/service/workspace
	if err != nil {
		return core.Session{}, err
	}
	sess.Cwd = cwd
	l, err := s.startLive(ctx, h, sess, preset, "", false)
	if err != nil {
		s.ws.Drop(ctx, repo)
		return core.Session{}, err
	}
	sess.NativeSessionID = l.Harness.NativeID()
	stored, err := s.opts.Store.CreateSession(ctx, sess)
	if err != nil {
		_ = l.Close(ctx)
		s.ws.Drop(ctx, repo)
		return core.Session{}, fmt.Errorf("record session: %w", err)
	}
	if repo.Repo != "" {
		if err := s.ws.Save(ctx, repo); err != nil {
			s.opts.Notifier.Log(2, fmt.Sprintf("session %s: recording its repository: %v", sess.ID, err))
		}
	}
	l.MarkRecorded()
	return s.opts.Store.GetSession(ctx, stored.ID)
}

// preset resolves a preset name for a host: the configuration file first,
// then the host's own list. "" means the host's default.
func (s *Service) preset(ctx context.Context, h core.BridgeHost, name string) (core.Preset, error) {
	if name == "" {
		return core.Preset{Harness: h.Harness()}, nil
	}
	configured := core.PresetsFor(s.opts.Presets, h.Harness())
	for _, p := range configured {
		if p.Name == name {
			return p, nil
		}
	}
	ps, err := h.Presets(ctx)
	if err != nil && !errors.Is(err, core.ErrUnsupported) {
		return core.Preset{}, fmt.Errorf("list presets of %s: %w", h.Harness(), err)
	}
	var names []string
	for _, p := range ps {
		if p.Name == name {
			p.Harness = h.Harness()
			return p, nil
		}
		names = append(names, p.Name)
	}
	for _, p := range configured {
		names = append(names, p.Name)
	}
	return core.Preset{}, core.Errorf(core.CodeNotFound, "preset %q not found for harness %s (have: %s)", name, h.Harness(), strings.Join(names, ", "))
}

// prompt records the user's message and runs one turn. A session whose
// harness is not running is resumed first (and the client is told how).
func (s *Service) prompt(ctx context.Context, sessionID string, content []core.Content) (core.TurnResult, error) {
	sess, err := s.promptable(ctx, sessionID, content)
	if err != nil {
		return core.TurnResult{}, err
	}
	l, err := s.lockLive(ctx, sess)
	if err != nil {
		return core.TurnResult{}, err
	}
	return s.promptHeld(ctx, l, content)
}

// promptable checks a prompt's content and loads its session, which must
// not be archived.
func (s *Service) promptable(ctx context.Context, sessionID string, content []core.Content) (core.Session, error) {
	if len(content) == 0 {
		return core.Session{}, invalidField("content", "content must hold at least one block")
	}
	for i, c := range content {
		switch c.Type {
		case "text":
		case "image":
			if err := checkImage(i, c); err != nil {
				return core.Session{}, err
			}
		default:
			return core.Session{}, invalidField(fmt.Sprintf("content[%d].type", i), "content[%d]: unknown type %q (want text or image)", i, c.Type)
		}
	}
	sess, err := s.session(ctx, sessionID)
	if err != nil {
		return core.Session{}, err
	}
	if sess.Archived {
		return core.Session{}, core.Errorf(core.CodeInvalid, "session %s is archived", sessionID)
	}
	return sess, nil
}

// promptHeld runs one prompt turn on l, whose turn the caller holds;
// it releases the turn.
func (s *Service) promptHeld(ctx context.Context, l *live.Session, content []core.Content) (core.TurnResult, error) {
	l.BeginPrompt()
	res, err := s.runTurn(ctx, l, content)
	steps := l.StepsCompleted()
	l.Turn.Unlock()
	if err != nil {
		steps = 0
	}
	s.afterTurn(l, steps)
	return res, err
}

// lockLive returns the session's running harness, resumed when needed,
// with its turn held. While the controller holds the session (an automatic
// checkpoint or an idle suspension) the prompt waits for it, and when that
// stopped the process, starts it again; another turn is busy.
func (s *Service) lockLive(ctx context.Context, sess core.Session) (*live.Session, error) {
	for attempt := 0; ; attempt++ {
		l, err := s.ensureLive(ctx, sess)
		if err != nil {
			return nil, err
		}
		if l.Turn.TryLock() {
			return l, nil
		}
		if !l.AutoRunning() || attempt > 0 {
			return nil, core.Errorf(core.CodeBusy, "session %s is already running a turn", sess.ID)
		}
		if err := lockTurn(ctx, l); err != nil {
			return nil, err
		}
		if s.liveFor(sess.ID) == l {
			return l, nil
		}
		l.Turn.Unlock() // suspended meanwhile: start it again
	}
}

// runTurn records the user message and runs the turn; the caller holds
// l.Turn.
func (s *Service) runTurn(ctx context.Context, l *live.Session, content []core.Content) (core.TurnResult, error) {
	defer l.ClearPending()
	payload, err := s.userPayload(ctx, content)
	if err != nil {
		return core.TurnResult{}, err
	}
	if _, err := l.AppendInOrder(ctx, core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(payload)}); err != nil {
		return core.TurnResult{}, err
	}
	cancelled := l.BeginTurn()
	defer l.EndTurn()
	select {
	case <-cancelled:
		// Cancelled while its user message was being recorded.
		return core.TurnResult{StopReason: "cancelled"}, nil
	default:
	}
	res, err := l.Harness.Prompt(ctx, content)
	// The adapter has reported the turn's events; have them recorded. Once
	// the turn is cancelled, its backlog is recorded quietly, without being
	// announced (see cancelmute.go): after session/cancel (answered at once)
	// the prompt ends when the backlog is recorded; after the prompt's own
	// request was cancelled, it is answered at once and the backlog is
	// recorded after the answer.
	if l.FlushOrCancel(ctx, cancelled) {
		if ctx.Err() == nil {
			l.Flush()
			return core.TurnResult{StopReason: "cancelled"}, nil
		}
		l.CancelTurn()
	}
	if err != nil {
		if ctx.Err() != nil {
			// Stop the harness too: an abandoned turn would otherwise keep
			// running and block the next one. Bounded, for a hung harness.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			_ = l.Harness.Cancel(cctx)
			cancel()
			return core.TurnResult{StopReason: "cancelled"}, fmt.Errorf("%w: %w", core.ErrCancelled, ctx.Err())
		}
		return core.TurnResult{}, wrapHarness(l.Host.Harness(), err)
	}
	return res, nil
}

// userPayload is the payload of the user.message entry recording content:
// its text blocks joined, its images kept in the record by hash.
func (s *Service) userPayload(ctx context.Context, content []core.Content) (core.UserMessagePayload, error) {
	var text []string
	var kept []core.MessageAttachment
	for _, c := range content {
		if c.Type == "text" {
			text = append(text, c.Text)
			continue
		}
		a, err := s.images.Keep(ctx, c)
		if err != nil {
			return core.UserMessagePayload{}, err
		}
		kept = append(kept, core.MessageAttachment{SHA256: a.SHA256, MediaType: a.MediaType, Bytes: a.Bytes})
	}
	return core.UserMessagePayload{Text: strings.Join(text, "\n"), Images: len(kept), Attachments: kept}, nil
}

// wrapHarness gives a harness failure a code when it has none. A turn
// that failed because the disk is full says so, not the harness's name.
func wrapHarness(harness string, err error) error {
	var e *core.Error
	if errors.As(err, &e) {
		return err
	}
	if core.IsDiskFull(err) {
		return core.DiskFull("the data directory", err)
	}
	return core.E(core.CodeHarness, harness, err)
}

// ensureLive returns the running harness session, resuming it when needed.
func (s *Service) ensureLive(ctx context.Context, sess core.Session) (*live.Session, error) {
	if l := s.liveFor(sess.ID); l != nil {
		return l, nil
	}
	if _, err := s.resume(ctx, sess.ID, false); err != nil {
		return nil, err
	}
	if l := s.liveFor(sess.ID); l != nil {
		return l, nil
	}
	return nil, core.Errorf(core.CodeUnavailable, "session %s: the harness could not be started", sess.ID)
}

// cancel interrupts the running turn. Cancelling an idle session is not an
// error.
func (s *Service) cancel(ctx context.Context, sessionID string) error {
	if _, err := s.session(ctx, sessionID); err != nil {
		return err
	}
	l := s.liveFor(sessionID)
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
		return wrapHarness(l.Host.Harness(), err)
	}
	return nil
}

// rename sets the session's title in the record and, where the harness can
// rename, on the harness side too.
func (s *Service) rename(ctx context.Context, sessionID, title string) error {
	if strings.TrimSpace(title) == "" {
		return invalidField("title", "title must not be empty")
	}
	if _, err := s.session(ctx, sessionID); err != nil {
		return err
	}
	if _, err := s.opts.Store.PatchSession(ctx, sessionID, core.SessionPatch{Title: core.Ptr(title)}); err != nil {
		return err
	}
	if l := s.liveFor(sessionID); l != nil {
		if err := l.Harness.Rename(ctx, title); err != nil && !errors.Is(err, core.ErrUnsupported) {
			s.opts.Notifier.Log(2, fmt.Sprintf("session %s: renamed in Bridge; the harness refused: %v", sessionID, err))
		}
	}
	return nil
}

// status is where sess stands as this service knows it: live when its
// harness process runs here, else what the newest status entry recorded
// (suspended by Bridge, or stopped: ended), else idle. It reads nothing.
func (s *Service) status(sess core.Session) schema.SessionStatus {
	if s.liveFor(sess.ID) != nil {
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

// archive stops the session's harness and hides it from the default list.
// The record is kept.
func (s *Service) archive(ctx context.Context, sessionID string) error {
	sess, err := s.session(ctx, sessionID)
	if err != nil {
		return err
	}
	if l := s.liveFor(sessionID); l != nil {
		if err := l.Close(ctx); err != nil {
			s.opts.Notifier.Log(2, fmt.Sprintf("session %s: stopping the harness: %v", sessionID, err))
		}
	}
	if h, ok := s.hosts.Lookup(sess.Harness); ok && sess.NativeSessionID != "" {
		if err := h.ArchiveSession(ctx, sess.NativeSessionID); err != nil && !errors.Is(err, core.ErrUnsupported) {
			s.opts.Notifier.Log(2, fmt.Sprintf("session %s: archived in Bridge; the harness refused: %v", sessionID, err))
		}
	}
	if err := s.ws.Archive(ctx, sessionID); err != nil {
		s.opts.Notifier.Log(2, fmt.Sprintf("session %s: archived; removing its worktree failed: %v", sessionID, err))
	}
	_, err = s.opts.Store.PatchSession(ctx, sessionID, core.SessionPatch{Archived: core.Ptr(true)})
	return err
}

// history pages the session's record backwards.
func (s *Service) history(ctx context.Context, sessionID string, beforeSeq int64, maxMessages int) ([]core.Entry, bool, error) {
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

// checkImage refuses an image block Bridge cannot keep, before anything
// happens.
func checkImage(i int, c core.Content) error {
	if c.Data == "" || c.MediaType == "" {
		return invalidField(fmt.Sprintf("content[%d].data", i), "content[%d]: an image needs mediaType and data", i)
	}
	if _, ok := attach.MediaTypes[strings.ToLower(c.MediaType)]; !ok {
		return invalidField(fmt.Sprintf("content[%d].mediaType", i), "content[%d]: image mediaType %q is not one of image/png, image/jpeg, image/webp, image/gif", i, c.MediaType)
	}
	if _, err := base64.StdEncoding.DecodeString(c.Data); err != nil {
		return core.E(core.CodeInvalid, fmt.Sprintf("content[%d]: image data is not base64", i), err)
	}
	return nil
}

// askLocked runs one turn in l, whose turn the caller holds, and returns
// the assistant text it produced.
func (s *Service) askLocked(ctx context.Context, l *live.Session, prompt string) (string, error) {
	stop := l.Capture()
	if _, err := s.runTurn(ctx, l, []core.Content{{Type: "text", Text: prompt}}); err != nil {
		stop()
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", core.E(core.CodeTimeout, "no reply in time", err)
		}
		return "", err
	}
	return stop(), nil
}
