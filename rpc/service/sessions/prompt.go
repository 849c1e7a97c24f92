package sessions

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/attach"
	"github.com/bridge-dev/bridge/rpc/service/live"
)

// Promptable checks a prompt's content and loads its session, which must
// not be archived.
func (s *Sessions) Promptable(ctx context.Context, sessionID string, content []core.Content) (core.Session, error) {
	if len(content) == 0 {
		return core.Session{}, core.InvalidField("content", "content must hold at least one block")
	}
	for i, c := range content {
		switch c.Type {
		case "text":
		case "image":
			if err := checkImage(i, c); err != nil {
				return core.Session{}, err
			}
		default:
			return core.Session{}, core.InvalidField(fmt.Sprintf("content[%d].type", i), "content[%d]: unknown type %q (want text or image)", i, c.Type)
		}
	}
	sess, err := s.Session(ctx, sessionID)
	if err != nil {
		return core.Session{}, err
	}
	if sess.Archived {
		return core.Session{}, core.Errorf(core.CodeInvalid, "session %s is archived", sessionID)
	}
	return sess, nil
}

// PromptHeld runs one prompt turn on l, whose turn the caller holds;
// it releases the turn.
func (s *Sessions) PromptHeld(ctx context.Context, l *live.Session, content []core.Content) (core.TurnResult, error) {
	l.BeginPrompt()
	res, err := s.RunTurn(ctx, l, content)
	steps := l.StepsCompleted()
	l.Turn.Unlock()
	if err != nil {
		steps = 0
	}
	s.opts.Controller.AfterTurn(l, steps)
	return res, err
}

// lockLive returns the session's running harness, resumed when needed,
// with its turn held. While the controller holds the session (an automatic
// checkpoint or an idle suspension) the prompt waits for it, and when that
// stopped the process, starts it again; another turn is busy.
func (s *Sessions) lockLive(ctx context.Context, sess core.Session) (*live.Session, error) {
	for attempt := 0; ; attempt++ {
		l, err := s.EnsureLive(ctx, sess)
		if err != nil {
			return nil, err
		}
		if l.Turn.TryLock() {
			return l, nil
		}
		if !l.AutoRunning() || attempt > 0 {
			return nil, core.Errorf(core.CodeBusy, "session %s is already running a turn", sess.ID)
		}
		if err := l.LockTurn(ctx); err != nil {
			return nil, err
		}
		if s.Live(sess.ID) == l {
			return l, nil
		}
		l.Turn.Unlock() // suspended meanwhile: start it again
	}
}

// RunTurn records the user message and runs the turn; the caller holds
// l.Turn.
func (s *Sessions) RunTurn(ctx context.Context, l *live.Session, content []core.Content) (core.TurnResult, error) {
	defer l.ClearPending()
	payload, err := s.UserPayload(ctx, content)
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
		return core.TurnResult{}, core.HarnessFailed(l.Host.Harness(), err)
	}
	return res, nil
}

// UserPayload is the payload of the user.message entry recording content:
// its text blocks joined, its images kept in the record by hash.
func (s *Sessions) UserPayload(ctx context.Context, content []core.Content) (core.UserMessagePayload, error) {
	var text []string
	var kept []core.MessageAttachment
	for _, c := range content {
		if c.Type == "text" {
			text = append(text, c.Text)
			continue
		}
		a, err := s.opts.Images.Keep(ctx, c)
		if err != nil {
			return core.UserMessagePayload{}, err
		}
		kept = append(kept, core.MessageAttachment{SHA256: a.SHA256, MediaType: a.MediaType, Bytes: a.Bytes})
	}
	return core.UserMessagePayload{Text: strings.Join(text, "\n"), Images: len(kept), Attachments: kept}, nil
}

// EnsureLive returns the running harness session, resuming it when needed.
func (s *Sessions) EnsureLive(ctx context.Context, sess core.Session) (*live.Session, error) {
	if l := s.Live(sess.ID); l != nil {
		return l, nil
	}
	if _, err := s.Resume(ctx, sess.ID, false); err != nil {
		return nil, err
	}
	if l := s.Live(sess.ID); l != nil {
		return l, nil
	}
	return nil, core.Errorf(core.CodeUnavailable, "session %s: the harness could not be started", sess.ID)
}

// checkImage refuses an image block Bridge cannot keep, before anything
// happens.
func checkImage(i int, c core.Content) error {
	if c.Data == "" || c.MediaType == "" {
		return core.InvalidField(fmt.Sprintf("content[%d].data", i), "content[%d]: an image needs mediaType and data", i)
	}
	if _, ok := attach.MediaTypes[strings.ToLower(c.MediaType)]; !ok {
		return core.InvalidField(fmt.Sprintf("content[%d].mediaType", i), "content[%d]: image mediaType %q is not one of image/png, image/jpeg, image/webp, image/gif", i, c.MediaType)
	}
	if _, err := base64.StdEncoding.DecodeString(c.Data); err != nil {
		return core.E(core.CodeInvalid, fmt.Sprintf("content[%d]: image data is not base64", i), err)
	}
	return nil
}

// Ask runs one turn in l, whose turn the caller holds, and returns
// the assistant text it produced.
func (s *Sessions) Ask(ctx context.Context, l *live.Session, prompt string) (string, error) {
	stop := l.Capture()
	if _, err := s.RunTurn(ctx, l, []core.Content{{Type: "text", Text: prompt}}); err != nil {
		stop()
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", core.E(core.CodeTimeout, "no reply in time", err)
		}
		return "", err
	}
	return stop(), nil
}

// Held is a running session's turn, held by the caller of Hold: it runs
// turns in the session until Release.
type Held struct {
	s *Sessions
	l *live.Session
}

// Hold takes sessionID's turn when a harness runs for it and no turn is
// running (false otherwise).
func (s *Sessions) Hold(sessionID string) (Held, bool) {
	l := s.Live(sessionID)
	if l == nil || !l.Turn.TryLock() {
		return Held{}, false
	}
	return Held{s: s, l: l}, true
}

// Run runs one turn with content.
func (t Held) Run(ctx context.Context, content []core.Content) error {
	_, err := t.s.RunTurn(ctx, t.l, content)
	return err
}

// Ask runs one turn with prompt and returns the assistant text it produced.
func (t Held) Ask(ctx context.Context, prompt string) (string, error) {
	return t.s.Ask(ctx, t.l, prompt)
}

// Release gives the turn back.
func (t Held) Release() { t.l.Turn.Unlock() }
