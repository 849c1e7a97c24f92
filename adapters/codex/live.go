package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/bridge-dev/bridge/adapters/internal/pending"
	"github.com/bridge-dev/bridge/core"
)

// focusNote is why a compaction focus is not applied.
const focusNote = "Codex's compaction command (thread/compact/start) takes no focus; the focus was not sent"

// live is one Codex thread driven by its own app-server process.
type live struct {
	h      *Host
	p      *proc
	sink   core.EventSink
	m      *mapper
	preset core.Preset
	req    core.CreateRequest // the approver permission requests go to
	asks   pending.Set        // approvals being decided, by the JSON text of the request id

	mu          sync.Mutex
	threadID    string
	model       string
	effort      string
	waiters     map[string]chan turnEnd
	finished    map[string]turnEnd
	compactedIn map[string]bool  // turns in which a compaction was reported
	compact     *compactWait     // set while Compact waits for its turn
	interrupted map[string]bool  // turns Cancel sent turn/interrupt for
	promptTurn  string           // the turn Prompt is waiting for
	usage       *core.TokenUsage // the last model call's, from thread/tokenUsage/updated
	closed      bool             // Close was called
	spare       *spare           // an idle side process for the next fork (fork.go)
	// retired are, on a side process, the threads of earlier forks, whose
	// late notifications are dropped.
	retired map[string]bool
}

// compactWait is what Compact learns while it waits for the turn its
// thread/compact/start started.
type compactWait struct {
	turn  chan string     // the compaction turn, once its compaction item began
	ended chan turnEnd    // a turn started meanwhile ended without a compaction, not replaced by it
	since map[string]bool // turns started while waiting
	found string          // the compaction turn ("" while unknown)
}

var (
	_ core.Live        = (*live)(nil)
	_ core.Compactor   = (*live)(nil)
	_ core.GoalHost    = (*live)(nil)
	_ core.GoalClearer = (*live)(nil)
	_ core.Forker      = (*live)(nil)
)

func newLive(h *Host, preset core.Preset, sink core.EventSink) *live {
	if sink == nil {
		sink = func(core.Event) {}
	}
	return &live{h: h, sink: sink, m: newMapper(), preset: preset,
		waiters: map[string]chan turnEnd{}, finished: map[string]turnEnd{}, compactedIn: map[string]bool{},
		interrupted: map[string]bool{}}
}

// NativeID is the Codex thread id.
func (l *live) NativeID() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.threadID
}

func (l *live) thread() string { return l.NativeID() }

// notification is called on the reader goroutine for every notification.
func (l *live) notification(method string, params json.RawMessage, raw []byte) {
	if l.fromRetired(params) {
		return
	}
	if method == "serverRequest/resolved" {
		l.serverRequestResolved(params)
	}
	out := l.m.notification(method, params, raw)
	for _, ev := range out.Events {
		l.sink(ev)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if method == "thread/tokenUsage/updated" {
		if u := lastUsage(params); u != nil {
			l.usage = u
		}
	}
	if out.Compacted != "" {
		l.compactedIn[out.Compacted] = true
	}
	if c := l.compact; c != nil {
		l.noteCompaction(c, out)
	}
	if e := out.TurnEnded; e != nil {
		if ch, ok := l.waiters[e.TurnID]; ok {
			ch <- *e
			delete(l.waiters, e.TurnID)
		} else {
			if len(l.finished) > 256 {
				l.finished = map[string]turnEnd{}
			}
			l.finished[e.TurnID] = *e
		}
	}
}

// noteCompaction follows the turns a waiting Compact may be waiting for
// (caller holds l.mu). The compaction turn is the one whose compaction item
// began; a turn that started meanwhile and ended interrupted without one,
// not by Cancel, is a turn the compaction replaced (Codex interrupts the
// running turn, e.g. a goal's continuation, to compact) and is passed over.
func (l *live) noteCompaction(c *compactWait, out mapOut) {
	if out.TurnStarted != "" {
		c.since[out.TurnStarted] = true
	}
	if out.ManualTurn != "" && c.found == "" {
		c.found = out.ManualTurn
		c.turn <- out.ManualTurn
	}
	if e := out.TurnEnded; e != nil && c.found == "" && c.since[e.TurnID] && !l.compactedIn[e.TurnID] {
		if e.Status != "interrupted" || l.interrupted[e.TurnID] {
			select {
			case c.ended <- *e:
			default:
			}
		}
	}
}

// badLine keeps a line that is not JSON-RPC as a harness.event.
func (l *live) badLine(raw []byte, err error) {
	line := string(raw)
	if len(line) > 4096 {
		line = line[:4096]
	}
	l.sink(entryEvent(core.KindHarnessEvent, rawID("badLine", raw),
		core.HarnessEventPayload{Type: "codex/badLine", Line: line, Error: err.Error()}))
}

// request answers a server-to-client request. Command-execution and
// file-change approvals are relayed (approvalRequest); the rest are
// answered at once, per the preset's ApprovalPolicy (denied when there is
// none), so the server is never left waiting.
func (l *live) request(id json.RawMessage, method string, params json.RawMessage, raw []byte) {
	if relayable(method) {
		l.approvalRequest(id, method, params)
		return
	}
	var p struct {
		ApprovalID *string `json:"approvalId"`
		ItemID     string  `json:"itemId"`
		CallID     string  `json:"callId"`
	}
	_ = json.Unmarshal(params, &p)
	approvalID := p.ItemID
	if p.ApprovalID != nil && *p.ApprovalID != "" {
		approvalID = *p.ApprovalID
	}
	if approvalID == "" {
		approvalID = p.CallID
	}
	if approvalID == "" {
		approvalID = rawID(method, raw)
	}
	approve := l.preset.ApprovalPolicy == "approve"
	var result any
	var decision string
	switch method {
	case "item/permissions/requestApproval":
		var pp struct {
			Permissions json.RawMessage `json:"permissions"`
		}
		_ = json.Unmarshal(params, &pp)
		decision = "denied"
		result = permissionsResult{Permissions: json.RawMessage(`{}`)}
		if approve && len(pp.Permissions) > 0 {
			decision = "granted"
			result = permissionsResult{Permissions: pp.Permissions}
		}
	case "mcpServer/elicitation/request":
		decision = "decline"
		result = actionResult{Action: "decline"}
	default:
		l.sink(harnessEvent("request:"+method, params, raw))
		_ = l.p.conn.replyError(id, -32601, "bridge does not handle "+method)
		return
	}
	policy := l.preset.ApprovalPolicy
	if policy != "approve" && policy != "deny" {
		policy = "deny (no approval policy set)"
	}
	req := core.ApprovalRequestedPayload{ApprovalID: approvalID, Method: method, Policy: policy}
	if json.Valid(params) {
		req.Params = params
	}
	l.sink(entryEvent(core.KindApprovalRequested, "approval:"+approvalID+":requested", req))
	_ = l.p.conn.reply(id, result)
	l.sink(entryEvent(core.KindApprovalResolved, "approval:"+approvalID+":resolved",
		core.ApprovalResolvedPayload{ApprovalID: approvalID, Decision: decision, By: core.DecidedByPolicy}))
}

// callErr turns a failed call into a domain error.
func (l *live) callErr(method string, err error) error {
	var re *rpcError
	switch {
	case errors.As(err, &re):
		return core.E(core.CodeHarness, fmt.Sprintf("codex %s failed: %s", method, re.Message), err)
	case errors.Is(err, errConnClosed):
		return l.exitedErr(method)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return core.E(core.CodeCancelled, fmt.Sprintf("codex %s: wait abandoned", method), errors.Join(core.ErrCancelled, err))
	}
	return fmt.Errorf("codex %s: %w", method, err)
}

func (l *live) exitedErr(doing string) error {
	<-l.p.done
	ex := l.p.Exit()
	return core.E(core.CodeHarness, fmt.Sprintf("codex app-server exited (code %d) during %s: %s", ex.Code, doing, ex.StderrTail), errConnClosed)
}

// awaitTurn waits for turn/completed of turn id.
func (l *live) awaitTurn(ctx context.Context, id string) (turnEnd, error) {
	l.mu.Lock()
	if e, ok := l.finished[id]; ok {
		delete(l.finished, id)
		l.mu.Unlock()
		return e, nil
	}
	ch := make(chan turnEnd, 1)
	l.waiters[id] = ch
	l.mu.Unlock()
	select {
	case e := <-ch:
		return e, nil
	case <-l.p.done:
		// The process may have reported the end just before exiting.
		select {
		case e := <-ch:
			return e, nil
		default:
		}
		return turnEnd{}, l.exitedErr("turn " + id)
	case <-ctx.Done():
		l.mu.Lock()
		delete(l.waiters, id)
		l.mu.Unlock()
		return turnEnd{}, l.callErr("turn "+id, ctx.Err())
	}
}

// userInput converts prompt content to Codex UserInput items.
func userInputs(content []core.Content) ([]userInput, error) {
	var in []userInput
	for _, c := range content {
		switch c.Type {
		case "text", "":
			in = append(in, userInput{Type: "text", Text: c.Text, TextElements: &[]any{}})
		case "image":
			if c.MediaType == "" || c.Data == "" {
				return nil, core.Errorf(core.CodeInvalid, "image content needs mediaType and data")
			}
			in = append(in, userInput{Type: "image", URL: "data:" + c.MediaType + ";base64," + c.Data})
		default:
			return nil, core.Errorf(core.CodeInvalid, "content type %q is not supported by codex", c.Type)
		}
	}
	if len(in) == 0 {
		return nil, core.Errorf(core.CodeInvalid, "prompt has no content")
	}
	return in, nil
}

// promptText is the text Codex's userMessage item will carry for content.
func promptText(content []core.Content) string {
	var texts []string
	for _, c := range content {
		if c.Type == "text" || c.Type == "" {
			texts = append(texts, c.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// Prompt runs one turn (turn/start) and returns at its turn/completed.
func (l *live) Prompt(ctx context.Context, content []core.Content) (core.TurnResult, error) {
	in, err := userInputs(content)
	if err != nil {
		return core.TurnResult{}, err
	}
	l.mu.Lock()
	params := turnStartParams{ThreadID: l.threadID, Input: in, Model: l.model, Effort: l.effort}
	l.mu.Unlock()
	var res struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	echo := promptText(content)
	l.m.expectPrompt(echo)
	if err := l.p.conn.call(ctx, "turn/start", params, &res); err != nil {
		l.m.dropPrompt(echo)
		return core.TurnResult{}, l.callErr("turn/start", err)
	}
	l.mu.Lock()
	l.promptTurn = res.Turn.ID
	l.mu.Unlock()
	end, err := l.awaitTurn(ctx, res.Turn.ID)
	l.mu.Lock()
	l.promptTurn = ""
	l.mu.Unlock()
	if err != nil {
		return core.TurnResult{}, err
	}
	switch end.Status {
	case "completed":
		return core.TurnResult{StopReason: "end_turn"}, nil
	case "interrupted":
		return core.TurnResult{StopReason: "cancelled"}, nil
	default:
		msg := end.Message
		if msg == "" {
			msg = "turn ended with status " + end.Status
		}
		return core.TurnResult{StopReason: "error"}, core.E(core.CodeHarness, "codex turn failed: "+msg, nil)
	}
}

// Cancel interrupts the running turn (turn/interrupt); idle is a no-op.
func (l *live) Cancel(ctx context.Context) error {
	turn := l.m.active()
	if turn == "" {
		l.mu.Lock()
		turn = l.promptTurn
		l.mu.Unlock()
	}
	if turn == "" {
		return nil
	}
	l.mu.Lock()
	if len(l.interrupted) > 256 {
		l.interrupted = map[string]bool{}
	}
	l.interrupted[turn] = true
	l.mu.Unlock()
	err := l.p.conn.call(ctx, "turn/interrupt", turnRef{ThreadID: l.thread(), TurnID: turn}, nil)
	if err != nil {
		return l.callErr("turn/interrupt", err)
	}
	return nil
}

// SelectModel sets the model and/or effort that turn/start carries from the
// next turn on (Codex keeps them for later turns too).
func (l *live) SelectModel(ctx context.Context, model, effort string) error {
	l.mu.Lock()
	if model != "" {
		l.model = model
	}
	if effort != "" {
		l.effort = effort
	}
	l.mu.Unlock()
	if model != "" {
		l.m.useModel(model)
		l.sink(core.Event{Model: model})
	}
	return nil
}

// Rename sets the thread name (thread/name/set).
func (l *live) Rename(ctx context.Context, title string) error {
	if err := l.p.conn.call(ctx, "thread/name/set", threadNameParams{ThreadID: l.thread(), Name: title}, nil); err != nil {
		return l.callErr("thread/name/set", err)
	}
	return nil
}

// Compact runs thread/compact/start and returns once the compaction turn it
// starts has completed; the context.compacted entry (trigger manual) has
// reached the sink by then. The command takes no focus.
//
// The compaction turn is recognised by its contextCompaction item, not as
// "the next turn to start": a goal-continuation turn can report
// turn/started after the request was sent and is then interrupted by the
// compaction, which runs in a turn of its own.
func (l *live) Compact(ctx context.Context, focus string) (core.CompactResult, error) {
	res := core.CompactResult{FocusApplied: false}
	if focus != "" {
		res.FocusNote = focusNote
	}
	c := &compactWait{turn: make(chan string, 1), ended: make(chan turnEnd, 1), since: map[string]bool{}}
	l.mu.Lock()
	if l.compact != nil {
		l.mu.Unlock()
		return res, core.Errorf(core.CodeBusy, "a codex compaction is already running")
	}
	l.compact = c
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		if l.compact == c {
			l.compact = nil
		}
		l.mu.Unlock()
	}()
	l.m.expectManual()
	if err := l.p.conn.call(ctx, "thread/compact/start", threadRef{ThreadID: l.thread()}, nil); err != nil {
		l.m.cancelManual()
		return res, l.callErr("thread/compact/start", err)
	}
	var turn string
	select {
	case turn = <-c.turn:
	case e := <-c.ended:
		l.m.cancelManual()
		return res, compactFailed(e)
	case <-l.p.done:
		return res, l.exitedErr("thread/compact/start")
	case <-ctx.Done():
		l.m.cancelManual()
		return res, l.callErr("thread/compact/start", ctx.Err())
	}
	end, err := l.awaitTurn(ctx, turn)
	if err != nil {
		return res, err
	}
	l.mu.Lock()
	ok := l.compactedIn[turn]
	l.mu.Unlock()
	if !ok {
		return res, compactFailed(end)
	}
	return res, nil
}

// compactFailed is the error for a compaction turn that ended without a
// completed contextCompaction item.
func compactFailed(end turnEnd) error {
	msg := end.Message
	if msg == "" {
		msg = "the compaction turn ended (" + end.Status + ") without a contextCompaction item"
	}
	return core.E(core.CodeHarness, "codex compaction failed: "+msg, nil)
}

// CreateGoal sets the thread's goal (thread/goal/set, status active). A
// Codex thread holds one goal, so its id is the thread id.
func (l *live) CreateGoal(ctx context.Context, g core.Goal) (string, error) {
	th := l.thread()
	err := l.p.conn.call(ctx, "thread/goal/set", goalParams{ThreadID: th, Objective: g.Text, Status: "active"}, nil)
	if err != nil {
		return "", l.callErr("thread/goal/set", err)
	}
	return th, nil
}

// PauseGoal pauses the thread's goal (thread/goal/set, status paused).
func (l *live) PauseGoal(ctx context.Context, goalID string) error {
	if goalID != l.thread() {
		return core.NotFound("codex goal", goalID)
	}
	if err := l.p.conn.call(ctx, "thread/goal/set", goalParams{ThreadID: goalID, Status: "paused"}, nil); err != nil {
		return l.callErr("thread/goal/set", err)
	}
	return nil
}

// ClearGoal clears the thread's goal (thread/goal/clear).
func (l *live) ClearGoal(ctx context.Context, goalID string) error {
	if goalID != l.thread() {
		return core.NotFound("codex goal", goalID)
	}
	if err := l.p.conn.call(ctx, "thread/goal/clear", threadRef{ThreadID: goalID}, nil); err != nil {
		return l.callErr("thread/goal/clear", err)
	}
	return nil
}

// Done is closed when the app-server process has ended.
func (l *live) Done() <-chan struct{} { return l.p.done }

// Exit tells how the process ended: exit code and the last 2 KB of stderr.
func (l *live) Exit() core.ExitInfo { return l.p.Exit() }

// Close stops the app-server process, and the spare side process of the
// session's forks, and waits for them.
func (l *live) Close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	sp := l.spare
	l.spare = nil
	l.mu.Unlock()
	if sp != nil {
		sp.idle.Stop()
		_ = sp.side.p.close(ctx)
	}
	return l.p.close(ctx)
}

// fromRetired reports whether a notification is about a retired thread
// (a side process's earlier fork).
func (l *live) fromRetired(params json.RawMessage) bool {
	l.mu.Lock()
	n := len(l.retired)
	l.mu.Unlock()
	if n == 0 {
		return false
	}
	var p struct {
		ThreadID string `json:"threadId"`
	}
	if json.Unmarshal(params, &p) != nil || p.ThreadID == "" {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.retired[p.ThreadID]
}

// retire ends a side process's fork: its thread's late notifications are
// dropped, and its turn state is cleared for the next fork.
func (l *live) retire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.retired == nil {
		l.retired = map[string]bool{}
	}
	if l.threadID != "" {
		l.retired[l.threadID] = true
	}
	l.threadID = ""
	l.waiters, l.finished = map[string]chan turnEnd{}, map[string]turnEnd{}
	l.compactedIn, l.interrupted = map[string]bool{}, map[string]bool{}
	l.promptTurn, l.usage, l.compact = "", nil, nil
}

// reuse readies a spare side process for the next fork with the live
// session's current model and effort.
func (l *live) reuse(model, effort string) {
	l.m.reset()
	l.mu.Lock()
	l.model, l.effort = model, effort
	l.mu.Unlock()
}
