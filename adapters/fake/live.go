package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// StderrTail is what a scripted crash leaves in Exit().StderrTail.
const StderrTail = "fake: crashed on request"

var (
	errCancelRequested = errors.New("fake: turn cancelled")
	errClosed          = errors.New("fake: session closed")
)

// Live is one running fake session (a core.Live with Compactor, GoalHost
// and GoalClearer).
type Live struct {
	h    *Host
	id   string
	gen  string // distinguishes entry ids of successive opens of one session
	sink core.EventSink
	req  core.CreateRequest // the preset and approver (ask)
	// discard: a fork's turn; nothing it does is stored.
	discard bool

	sinkMu sync.Mutex // one sink call at a time

	mu       sync.Mutex
	n        int64                   // entries emitted by this Live
	turn     context.CancelCauseFunc // non-nil while a turn runs
	turnDone chan struct{}
	used     int64
	pending  []core.NewEntry // entries of the running turn, stored at its end
	queue    []queued        // directives queued by the running turn
	dead     bool
	done     chan struct{}
	exit     core.ExitInfo
}

func (h *Host) open(id string, req core.CreateRequest, sink core.EventSink) *Live {
	return &Live{h: h, id: id, req: req, gen: randHex(3), sink: sink, done: make(chan struct{})}
}

// NativeID is the session id, known from the start.
func (l *Live) NativeID() string { return l.id }

// Done is closed when the session has crashed or been closed.
func (l *Live) Done() <-chan struct{} { return l.done }

// Exit tells how the session ended; valid after Done is closed.
func (l *Live) Exit() core.ExitInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.exit
}

func (l *Live) nextID() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return fmt.Sprintf("%s.%s.%d", l.id, l.gen, l.n)
}

// alive returns an error when the session has ended.
func (l *Live) alive() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadErr()
}

func (l *Live) deadErr() error {
	if !l.dead {
		return nil
	}
	return core.E(core.CodeHarness, fmt.Sprintf("fake: session %s has ended (exit code %d)", l.id, l.exit.Code), nil)
}

func (l *Live) send(ev core.Event) {
	if l.sink == nil {
		return
	}
	l.sinkMu.Lock()
	defer l.sinkMu.Unlock()
	l.sink(ev)
}

// emit sends an entry and keeps it for the store.
func (l *Live) emit(kind core.Kind, payload any) {
	l.emitEntry(core.NewEntry{Kind: kind, Payload: core.Payload(payload), NativeID: l.nextID()})
}

func (l *Live) emitEntry(e core.NewEntry) {
	l.mu.Lock()
	l.pending = append(l.pending, e)
	l.mu.Unlock()
	l.send(core.Event{Entry: &e})
}

func (l *Live) gauge() {
	if !l.h.has(core.CapContextGauge) {
		return
	}
	l.mu.Lock()
	g := core.Gauge{Used: l.used, Size: l.h.opts.Window}
	l.mu.Unlock()
	l.send(core.Event{Gauge: &g})
}

func tokens(s string) int64 { return int64(len(s)/4 + 1) }

// flush stores the pending entries, queued directives and usage.
func (l *Live) flush() error {
	if l.discard {
		return nil
	}
	l.mu.Lock()
	pending, queue, used := l.pending, l.queue, l.used
	l.pending, l.queue = nil, nil
	l.mu.Unlock()
	return l.h.update(l.id, func(r *record) error {
		r.Entries = append(r.Entries, pending...)
		r.Queue = append(r.Queue, queue...)
		r.Used = used
		return nil
	})
}

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
			l.compacted(s.Trigger, s.Pre, s.Post, "", nil)
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

// compacted emits a context.compacted entry and lowers the usage.
func (l *Live) compacted(trigger string, pre, post int64, focus string, applied *bool) {
	l.mu.Lock()
	if pre == 0 && post == 0 {
		pre, post = l.used, l.used/10
	}
	l.used = post
	l.mu.Unlock()
	c := core.Compacted{Harness: Harness, Trigger: trigger, PreTokens: &pre, PostTokens: &post,
		NativeID: l.nextID(), Summary: fmt.Sprintf("fake summary (%d tokens before)", pre),
		Focus: focus, FocusApplied: applied,
		Raw: core.Payload(struct {
			Type    string `json:"type"`
			Trigger string `json:"trigger"`
			Pre     int64  `json:"pre"`
			Post    int64  `json:"post"`
			Focus   string `json:"focus"`
		}{"compact", trigger, pre, post, focus})}
	l.emitEntry(c.Entry())
	l.gauge()
}

// die ends the session once.
func (l *Live) die(exit core.ExitInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead {
		return
	}
	l.dead, l.exit = true, exit
	close(l.done)
}

// Cancel ends the running turn with "cancelled"; with no turn it does
// nothing.
func (l *Live) Cancel(ctx context.Context) error {
	if err := l.h.refuse(core.CapSessionCancel); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.turn != nil {
		l.turn(errCancelRequested)
	}
	return nil
}

// Close ends the running turn, waits for it and ends the session (exit code
// 0). Closing twice is harmless.
func (l *Live) Close(ctx context.Context) error {
	l.mu.Lock()
	cancel, turnDone := l.turn, l.turnDone
	l.mu.Unlock()
	if cancel != nil {
		cancel(errClosed)
	}
	if turnDone != nil {
		select {
		case <-turnDone:
		case <-ctx.Done():
			return fmt.Errorf("fake: close: %w", ctx.Err())
		}
	}
	l.die(core.ExitInfo{Code: 0})
	return nil
}

// SelectModel switches model and/or effort ("" keeps the current one) and
// reports the model in use.
func (l *Live) SelectModel(ctx context.Context, model, effort string) error {
	if err := l.h.refuse(core.CapSessionSelect); err != nil {
		return err
	}
	if err := l.alive(); err != nil {
		return err
	}
	var now string
	err := l.h.update(l.id, func(r *record) error {
		if model != "" {
			if findModel(model) == nil {
				return core.Errorf(core.CodeInvalid, "fake: unknown model %q", model)
			}
			r.Model = model
		}
		if effort != "" {
			m := findModel(r.Model)
			if m == nil || !contains(m.Efforts, effort) {
				return core.Errorf(core.CodeInvalid, "fake: model %q has no effort %q", r.Model, effort)
			}
			r.Effort = effort
		}
		now = r.Model
		return nil
	})
	if err != nil {
		return err
	}
	l.send(core.Event{Model: now})
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Rename sets the stored session's title.
func (l *Live) Rename(ctx context.Context, title string) error {
	if err := l.h.refuse(core.CapSessionRename); err != nil {
		return err
	}
	if err := l.alive(); err != nil {
		return err
	}
	return l.h.update(l.id, func(r *record) error { r.Title = title; return nil })
}

// Compact runs the fake compaction command: a context.compacted entry with
// trigger manual goes to the sink before it returns. The focus is honoured
// only with Options.CompactFocus; otherwise FocusApplied is false and
// FocusNote says why. A running turn makes it fail with core.CodeBusy.
func (l *Live) Compact(ctx context.Context, focus string) (core.CompactResult, error) {
	if err := l.h.refuse(core.CapCompactCommand); err != nil {
		return core.CompactResult{}, err
	}
	l.mu.Lock()
	if err := l.deadErr(); err != nil {
		l.mu.Unlock()
		return core.CompactResult{}, err
	}
	if l.turn != nil {
		l.mu.Unlock()
		return core.CompactResult{}, core.Errorf(core.CodeBusy, "fake: session %s is running a turn", l.id)
	}
	l.turn = func(error) {} // hold off prompts while compacting
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.turn = nil
		l.mu.Unlock()
	}()
	if r, err := l.h.get(l.id); err == nil {
		l.mu.Lock()
		l.used = r.Used
		l.mu.Unlock()
	}
	res := core.CompactResult{}
	if focus != "" {
		res.FocusApplied = l.h.has(core.CapCompactionFocus)
		if !res.FocusApplied {
			res.FocusNote = "the fake compaction command takes no focus"
		}
	}
	var applied *bool
	if focus != "" {
		applied = &res.FocusApplied
	}
	l.compacted(core.TriggerManual, 0, 0, focus, applied)
	if err := l.flush(); err != nil {
		return core.CompactResult{}, err
	}
	return res, nil
}

// CreateGoal stores an active goal and returns its id.
func (l *Live) CreateGoal(ctx context.Context, g core.Goal) (string, error) {
	if err := l.h.refuse(core.CapGoalCreate); err != nil {
		return "", err
	}
	if strings.TrimSpace(g.Text) == "" {
		return "", core.Errorf(core.CodeInvalid, "fake: a goal needs text")
	}
	if err := l.alive(); err != nil {
		return "", err
	}
	var id string
	err := l.h.update(l.id, func(r *record) error {
		id = fmt.Sprintf("goal-%d", len(r.Goals)+1)
		r.Goals = append(r.Goals, GoalState{ID: id, Text: g.Text, Rounds: g.Rounds, Status: "active"})
		return nil
	})
	return id, err
}

// PauseGoal pauses a goal; with Options.GoalPauseFails it fails with a
// core.CodeHarness error and changes nothing.
func (l *Live) PauseGoal(ctx context.Context, goalID string) error {
	if err := l.h.refuse(core.CapGoalPause); err != nil {
		return err
	}
	if l.h.opts.GoalPauseFails {
		return core.Errorf(core.CodeHarness, "fake: pausing goal %s failed (Options.GoalPauseFails)", goalID)
	}
	return l.setGoal(goalID, "paused")
}

// ClearGoal clears a goal.
func (l *Live) ClearGoal(ctx context.Context, goalID string) error {
	if err := l.h.refuse(core.CapGoalClear); err != nil {
		return err
	}
	return l.setGoal(goalID, "cleared")
}

func (l *Live) setGoal(goalID, status string) error {
	if err := l.alive(); err != nil {
		return err
	}
	return l.h.update(l.id, func(r *record) error {
		for i := range r.Goals {
			if r.Goals[i].ID == goalID {
				r.Goals[i].Status = status
				return nil
			}
		}
		return core.NotFound("fake goal", goalID)
	})
}
