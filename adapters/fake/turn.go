package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// Prompt runs one scripted turn. It returns StopReason "end_turn", or
// "cancelled" after Cancel (nil error), after the prompt's ctx ended (an
// error wrapping ctx.Err()) or after Close (an error). A crash returns
// StopReason "error" and a core.CodeHarness error.
func (l *Live) Prompt(ctx context.Context, content []core.Content) (core.TurnResult, error) {
	if err := l.h.refuse(core.CapSessionPrompt); err != nil {
		return core.TurnResult{}, err
	}
	text, images, err := splitContent(content)
	if err != nil {
		return core.TurnResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return core.TurnResult{}, fmt.Errorf("fake: prompt: %w", err)
	}
	if len(images) > 0 && l.h.opts.VisionAdmission {
		// Admission: a text-only model refuses images before anything
		// of the turn begins.
		if r, err := l.h.get(l.id); err == nil {
			if m := findModel(r.Model); m != nil && !m.Vision {
				return core.TurnResult{}, core.E(core.CodeUnsupported, fmt.Sprintf("fake: model %s reads no images", m.ID), core.ErrImagesRefused)
			}
		}
	}
	l.mu.Lock()
	if err := l.deadErr(); err != nil {
		l.mu.Unlock()
		return core.TurnResult{}, err
	}
	if l.turn != nil {
		l.mu.Unlock()
		return core.TurnResult{}, core.Errorf(core.CodeBusy, "fake: session %s is already running a turn", l.id)
	}
	turnCtx, cancel := context.WithCancelCause(ctx)
	l.turn, l.turnDone = cancel, make(chan struct{})
	turnDone := l.turnDone
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.turn, l.turnDone = nil, nil
		l.mu.Unlock()
		cancel(nil)
		close(turnDone)
	}()

	due, prompts, err := l.begin(text, images)
	if err != nil {
		return core.TurnResult{StopReason: "error"}, err
	}
	steps, err := l.steps(text, images, due)
	if err != nil {
		return core.TurnResult{StopReason: "error"}, errors.Join(err, l.flush())
	}
	res, runErr := l.run(turnCtx, steps, prompts)
	if ferr := l.flush(); ferr != nil && runErr == nil {
		runErr = ferr
	}
	if res.StopReason != "error" {
		l.gauge()
	}
	return res, runErr
}

// splitContent joins the text blocks and checks the image blocks.
func splitContent(content []core.Content) (string, []core.Content, error) {
	if len(content) == 0 {
		return "", nil, core.Errorf(core.CodeInvalid, "fake: empty prompt")
	}
	var texts []string
	var images []core.Content
	for i, c := range content {
		switch c.Type {
		case "text":
			texts = append(texts, c.Text)
		case "image":
			if c.Data == "" || c.MediaType == "" {
				return "", nil, core.Errorf(core.CodeInvalid, "fake: content block %d: an image needs mediaType and data", i)
			}
			images = append(images, c)
		default:
			return "", nil, core.Errorf(core.CodeInvalid, "fake: content block %d: unknown type %q", i, c.Type)
		}
	}
	return strings.Join(texts, "\n"), images, nil
}

// begin stores the user message, takes the directives due now and returns
// them with the prompt's number.
func (l *Live) begin(text string, images []core.Content) ([]string, int64, error) {
	var due []string
	var prompts, used int64
	userID := l.nextID()
	err := l.h.update(l.id, func(r *record) error {
		due = r.nextPrompt()
		prompts = r.Prompts
		payload := core.UserMessagePayload{Text: text}
		if len(images) > 0 {
			if r.Attachments == nil {
				r.Attachments = map[string]core.Content{}
			}
			for _, img := range images {
				ref := fmt.Sprintf("att-%d", len(r.Attachments)+1)
				r.Attachments[ref] = img
				payload.Attachments = append(payload.Attachments, core.MessageAttachment{Ref: ref, MediaType: img.MediaType})
			}
		}
		r.Entries = append(r.Entries, core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(payload), NativeID: userID})
		r.Used += tokens(text)
		used = r.Used
		return nil
	})
	l.mu.Lock()
	l.used = used
	l.mu.Unlock()
	return due, prompts, err
}

// steps picks what the turn does: directives queued for it, then
// Options.Script, then the prompt's own script, then the echo.
func (l *Live) steps(text string, images []core.Content, due []string) ([]Step, error) {
	if len(due) > 0 {
		var steps []Step
		for _, line := range due {
			s, err := ParseLine(line)
			if err != nil {
				return nil, core.E(core.CodeInvalid, "fake: queued directive "+line, err)
			}
			steps = append(steps, s)
		}
		return steps, nil
	}
	if l.h.opts.Script != nil {
		if steps := l.h.opts.Script(text); steps != nil {
			return steps, nil
		}
	}
	steps, err := Parse(text)
	if err != nil {
		return nil, core.E(core.CodeInvalid, "fake: bad script", err)
	}
	if steps != nil {
		return steps, nil
	}
	if reply, ok := handoffReply(text); ok {
		return []Step{{Op: OpJSON, Text: reply}}, nil
	}
	echo := "fake: " + text
	if len(images) > 0 {
		var kinds []string
		for _, img := range images {
			kinds = append(kinds, img.MediaType)
		}
		echo += fmt.Sprintf(" [%d image(s): %s]", len(images), strings.Join(kinds, ", "))
	}
	return []Step{Say(echo)}, nil
}

// run performs the steps of one turn.
func (l *Live) run(ctx context.Context, steps []Step, prompts int64) (core.TurnResult, error) {
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return l.stopped(ctx)
		}
		switch s.Op {
		case OpSay, OpJSON:
			l.say(s.Text)
		case OpThink:
			l.emit(core.KindHarnessEvent, core.HarnessEventPayload{Type: "agent_thought", Text: s.Text})
		case OpTool:
			toolID := fmt.Sprintf("tool-%s", l.nextID())
			l.emit(core.KindToolStarted, core.ToolStartedPayload{ToolID: toolID, Name: s.Name, Input: s.Text})
			l.emit(core.KindToolCompleted, core.ToolCompletedPayload{ToolID: toolID, Name: s.Name,
				Output: fmt.Sprintf("fake %s done: %s", s.Name, s.Text)})
			l.addUsed(20)
		case OpAsk:
			toolID := fmt.Sprintf("tool-%s", l.nextID())
			input, _ := json.Marshal(map[string]string{"arg": s.Text})
			kind := "other"
			if s.Name == "Bash" {
				kind = "execute"
			}
			d := l.req.Approval(ctx, core.ApprovalRequest{ID: toolID, ToolCallID: toolID, Title: s.Name + ": " + s.Text,
				Kind: kind, RawInput: input, Key: s.Name})
			if !d.Allowed() {
				l.emit(core.KindToolCompleted, core.ToolCompletedPayload{ToolID: toolID, Name: s.Name,
					Output: fmt.Sprintf("refused (%s, by %s): %s", d.Kind, d.By, d.Reason), IsError: true})
				continue
			}
			l.emit(core.KindToolStarted, core.ToolStartedPayload{ToolID: toolID, Name: s.Name, Input: s.Text})
			l.emit(core.KindToolCompleted, core.ToolCompletedPayload{ToolID: toolID, Name: s.Name,
				Output: fmt.Sprintf("fake %s done: %s", s.Name, s.Text)})
		case OpToolStart:
			l.emit(core.KindToolStarted, core.ToolStartedPayload{ToolID: fmt.Sprintf("tool-%s", l.nextID()), Name: s.Name, Input: s.Text})
		case OpPlan:
			steps, err := PlanSteps(s.Text)
			if err != nil {
				return core.TurnResult{StopReason: "error"}, core.E(core.CodeInvalid, "fake: "+err.Error(), nil)
			}
			l.emit(core.KindPlanUpdated, core.Plan{Steps: steps, Source: "fake"})
		case OpStream:
			for i := int64(1); i <= s.N; i++ {
				if ctx.Err() != nil {
					return l.stopped(ctx)
				}
				l.say(fmt.Sprintf("stream %d/%d", i, s.N))
			}
		case OpCompact:
			l.compacted(core.CompactionTrigger(s.Trigger), s.Pre, s.Post, "", nil)
		case OpUsage:
			l.mu.Lock()
			l.used = s.N
			l.mu.Unlock()
			l.gauge()
		case OpSleep:
			t := time.NewTimer(s.Wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return l.stopped(ctx)
			}
		case OpHang:
			<-ctx.Done()
			return l.stopped(ctx)
		case OpCrash:
			if err := l.flush(); err != nil {
				return core.TurnResult{StopReason: "error"}, err
			}
			l.die(core.ExitInfo{Code: int(s.N), StderrTail: StderrTail, Err: fmt.Sprintf("exit status %d", s.N)})
			return core.TurnResult{StopReason: "error"},
				core.E(core.CodeHarness, fmt.Sprintf("fake: harness exited with code %d: %s", s.N, StderrTail), nil)
		case OpFile:
			l.emit(core.KindArtifactCreated, core.ArtifactCreatedPayload{Path: s.Text})
		case OpDecide:
			l.emit(core.KindWorkerResult, core.WorkerResultPayload{Status: "completed", Decisions: []any{s.Text}})
		case OpWorker:
			l.h.mu.Lock()
			l.h.worker = append(l.h.worker, s.Text)
			l.h.mu.Unlock()
		case OpNext, OpAfter:
			k := s.N
			if k < 1 {
				k = 1
			}
			l.mu.Lock()
			l.queue = append(l.queue, queued{Due: prompts + k, Line: s.Text})
			l.mu.Unlock()
		default:
			return core.TurnResult{StopReason: "error"}, core.Errorf(core.CodeInvalid, "fake: unknown step %q", s.Op)
		}
	}
	return core.TurnResult{StopReason: "end_turn"}, nil
}

func (l *Live) say(text string) {
	l.emit(core.KindAssistantMessage, core.AssistantMessagePayload{Text: text})
	l.addUsed(tokens(text))
}

func (l *Live) addUsed(n int64) {
	l.mu.Lock()
	l.used += n
	l.mu.Unlock()
}

// stopped reports a turn whose context ended, by cause.
func (l *Live) stopped(ctx context.Context) (core.TurnResult, error) {
	res := core.TurnResult{StopReason: "cancelled"}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errCancelRequested):
		return res, nil
	case errors.Is(cause, errClosed):
		return res, core.E(core.CodeHarness, fmt.Sprintf("fake: session %s closed during the turn", l.id), errClosed)
	default:
		return res, fmt.Errorf("fake: turn abandoned: %w", ctx.Err())
	}
}
