package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// live is one ACP session in its own agent process.
type live struct {
	h      *Host
	a      *agent
	sink   core.EventSink
	preset core.Preset
	req    core.CreateRequest // the approver permission requests go to

	turn sync.Mutex // one prompt (or compaction) at a time

	id atomic.Value // string: the agent's session id

	mu        sync.Mutex // guards the mapper, sink calls and the fields below
	m         *mapper
	setup     sessionSetup
	closed    bool
	approvals int
	usage     *core.TokenUsage // the last turn's, when the agent reported it
}

var (
	_ core.Live      = (*live)(nil)
	_ core.Compactor = (*live)(nil)
)

// CreateSession starts an agent process, initializes it and opens a session
// with session/new in req.Cwd.
func (h *Host) CreateSession(ctx context.Context, req core.CreateRequest, sink core.EventSink) (core.Live, error) {
	l, err := h.open(ctx, req, sink, false)
	if err != nil {
		return nil, err
	}
	raw, err := l.a.call(ctx, "session/new", newSessionParams{Cwd: absDir(l.cwd(req.Cwd)), McpServers: []any{}})
	if err == nil {
		err = l.started(raw, "")
	}
	if err == nil {
		err = l.applyModel(ctx, req.Model)
	}
	if err == nil {
		err = l.applyMode(ctx, req.Preset.PermissionMode)
	}
	if err != nil {
		l.a.stop(context.Background())
		return nil, fmt.Errorf("acp: create session: %w%s", err, l.a.tailNote())
	}
	return l, nil
}

// Resume starts an agent process and resumes nativeID with session/load
// (preferred: it proves the agent holds the session) or session/resume,
// whichever the agent advertises. The load replay is not recorded again: the
// record already holds it. A failure is a *core.ResumeError carrying the
// agent's own message.
func (h *Host) Resume(ctx context.Context, req core.ResumeRequest, sink core.EventSink) (core.Live, error) {
	l, err := h.open(ctx, req.CreateRequest, sink, false)
	if err != nil {
		return nil, err
	}
	caps := l.a.init.AgentCapabilities
	method := ""
	switch {
	case caps.LoadSession:
		method = "session/load"
	case present(caps.SessionCapabilities.Resume):
		method = "session/resume"
	default:
		l.a.stop(context.Background())
		return nil, unsupported("the agent advertises neither loadSession nor session/resume")
	}
	l.mu.Lock()
	l.m.mode = modeSilent
	l.m.sessionID = req.NativeID
	l.mu.Unlock()
	cwd := l.cwd(req.Cwd)
	if present(caps.SessionCapabilities.List) {
		// Agents key stored sessions by working directory (claude-code-acp
		// finds the file anywhere, but Claude Code then resumes only in the
		// session's own folder): load it where the agent says it lives.
		if dir := l.a.sessionCwd(ctx, req.NativeID); dir != "" {
			cwd = dir
		}
	}
	raw, err := l.a.call(ctx, method, loadSessionParams{SessionID: req.NativeID, Cwd: absDir(cwd), McpServers: []any{}})
	l.mu.Lock()
	l.m.flush() // the replay's last message, unrecorded
	l.m.settleCost()
	l.m.mode = modeLive
	l.mu.Unlock()
	if err != nil {
		l.a.stop(context.Background())
		text := err.Error()
		var re *rpcError
		if errors.As(err, &re) {
			text = re.Message
			if present(re.Data) {
				text += ": " + string(re.Data)
			}
		}
		return nil, &core.ResumeError{NativeText: text, Err: err}
	}
	if err := l.started(raw, req.NativeID); err != nil {
		l.a.stop(context.Background())
		return nil, &core.ResumeError{NativeText: err.Error(), Err: err}
	}
	if err := l.applyModel(ctx, req.Model); err != nil {
		l.a.stop(context.Background())
		return nil, err
	}
	if err := l.applyMode(ctx, req.Preset.PermissionMode); err != nil {
		l.a.stop(context.Background())
		return nil, err
	}
	return l, nil
}

// open starts the process for a live session; side (a fork's process)
// starts it in the background (spawn).
func (h *Host) open(ctx context.Context, req core.CreateRequest, sink core.EventSink, side bool) (*live, error) {
	if sink == nil {
		sink = func(core.Event) {}
	}
	l := &live{h: h, sink: sink, preset: req.Preset, req: req}
	l.m = newMapper(h.cfg.Name, "", newNonce(), modeLive)
	a, err := h.spawn(ctx, l.cwd(req.Cwd), l, side)
	if err != nil {
		return nil, err
	}
	l.a = a
	return l, nil
}

func (l *live) cwd(dir string) string {
	if dir == "" {
		return l.h.cfg.Cwd
	}
	return dir
}

// started takes the session setup result; want, when set, is the id the
// session must have (load and resume may return no id at all).
func (l *live) started(raw json.RawMessage, want string) error {
	var s sessionSetup
	if present(raw) {
		if err := json.Unmarshal(raw, &s); err != nil {
			return core.E(core.CodeHarness, "acp: session setup result", err)
		}
	}
	if s.SessionID == "" {
		s.SessionID = want
	}
	if s.SessionID == "" {
		return core.Errorf(core.CodeHarness, "acp: session/new returned no sessionId")
	}
	if want != "" && s.SessionID != want {
		return core.Errorf(core.CodeHarness, "acp: asked for session %s, the agent opened %s", want, s.SessionID)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.id.Store(s.SessionID)
	l.setup = s
	l.m.sessionID = s.SessionID
	l.h.learnSession(l.m, &s)
	l.sink(core.Event{NativeSessionID: s.SessionID})
	if s.Models != nil && s.Models.CurrentModelID != "" {
		l.sink(core.Event{Model: s.Models.CurrentModelID})
	}
	return nil
}

// applyModel selects model when one is asked for and differs from the
// current one.
func (l *live) applyModel(ctx context.Context, model string) error {
	if model == "" {
		return nil
	}
	l.mu.Lock()
	cur := ""
	if l.setup.Models != nil {
		cur = l.setup.Models.CurrentModelID
	}
	l.mu.Unlock()
	if model == cur {
		return nil
	}
	return l.SelectModel(ctx, model, "")
}

// applyMode switches the session to the preset's mode (Preset.PermissionMode
// names an ACP session mode id, e.g. "acceptEdits" or "plan") with
// session/set_mode. A mode the agent does not offer is refused by name.
func (l *live) applyMode(ctx context.Context, mode string) error {
	if mode == "" {
		return nil
	}
	l.mu.Lock()
	raw := l.setup.Modes
	l.mu.Unlock()
	var modes struct {
		CurrentModeID  string `json:"currentModeId"`
		AvailableModes []struct {
			ID string `json:"id"`
		} `json:"availableModes"`
	}
	if present(raw) {
		_ = json.Unmarshal(raw, &modes)
	}
	if modes.CurrentModeID == mode {
		return nil
	}
	var ids []string
	for _, m := range modes.AvailableModes {
		if m.ID == mode {
			if _, err := l.a.call(ctx, "session/set_mode", setModeParams{SessionID: l.NativeID(), ModeID: mode}); err != nil {
				return fmt.Errorf("acp: set mode %q: %w", mode, err)
			}
			return nil
		}
		ids = append(ids, m.ID)
	}
	return core.Errorf(core.CodeInvalid, "acp: the agent offers no session mode %q (modes: %v)", mode, ids)
}

// NativeID returns the agent's session id.
func (l *live) NativeID() string {
	id, _ := l.id.Load().(string)
	return id
}

// emit hands events to the sink; the caller holds l.mu.
func (l *live) emit(evs []core.Event) {
	for _, ev := range evs {
		l.sink(ev)
	}
}

// notify handles the agent's notifications (session/update).
func (l *live) notify(method string, params json.RawMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if method != "session/update" {
		if l.m.mode == modeLive {
			l.emit([]core.Event{l.m.harnessEvent(method, params)})
		}
		return
	}
	var n sessionNotification
	if err := json.Unmarshal(params, &n); err != nil {
		l.emit([]core.Event{l.m.harnessEvent("malformed_session_update", params)})
		return
	}
	evs := l.m.update(n.Update)
	l.h.learnSession(l.m, nil) // before the sink sees a gauge reading
	l.emit(evs)
}

// request answers the agent's requests. Permission requests are answered by
// the preset's ApprovalPolicy ("approve" picks an allow option, anything
// else a reject option) and recorded as approval.requested and
// approval.resolved. Bridge offers no file system or terminal, so the agent
// has no reason to call fs/* or terminal/*: those are refused.
func (l *live) request(method string, params json.RawMessage) (any, *rpcError) {
	if method != "session/request_permission" {
		l.mu.Lock()
		l.emit([]core.Event{l.m.harnessEvent("refused_request:"+method, params)})
		l.mu.Unlock()
		return nil, &rpcError{Code: -32601, Message: "method not found: " + method}
	}
	var req permissionRequest
	if err := json.Unmarshal(params, &req); err != nil {
		return nil, &rpcError{Code: -32602, Message: "invalid session/request_permission params: " + err.Error()}
	}
	var tool struct {
		ToolCallID string          `json:"toolCallId"`
		Title      string          `json:"title"`
		Kind       string          `json:"kind"`
		RawInput   json.RawMessage `json:"rawInput"`
	}
	_ = json.Unmarshal(req.ToolCall, &tool)
	l.mu.Lock()
	l.approvals++
	id := fmt.Sprintf("%s:%s:%d", l.m.nonce, tool.ToolCallID, l.approvals)
	if tool.Kind == "" {
		tool.Kind = l.m.toolKinds[tool.ToolCallID]
	}
	// What the agent reported before asking is recorded before the request.
	if evs := l.m.flush(); l.m.mode == modeLive {
		l.emit(evs)
	}
	l.mu.Unlock()
	ar := core.ApprovalRequest{ID: id, ToolCallID: tool.ToolCallID, Title: tool.Title, Kind: tool.Kind, RawInput: tool.RawInput,
		Key: "acp:" + tool.Kind}
	if ar.Kind == "" {
		name, _, _ := strings.Cut(tool.Title, " ")
		ar.Kind, ar.Key = "other", "acp:"+name
	}
	for _, o := range req.Options {
		ar.Options = append(ar.Options, core.ApprovalOption{ID: o.OptionID, Name: o.Name, Kind: core.ApprovalOptionKind(o.Kind)})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.a.conn.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	d := l.req.Approval(ctx, ar)
	if d.Cancelled {
		// ACP: a request open when the turn is cancelled is answered cancelled.
		return cancelledOutcome, nil
	}
	for _, o := range req.Options {
		if o.OptionID == d.OptionID {
			return permissionResponse{Outcome: permissionOutcome{Outcome: "selected", OptionID: o.OptionID}}, nil
		}
	}
	return cancelledOutcome, nil
}

// async says which agent requests are answered off the reading goroutine:
// a permission request waits for a person.
func (l *live) async(method string) bool { return method == "session/request_permission" }

// malformed keeps a line that is not JSON-RPC as data.
func (l *live) malformed(line []byte, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m.mode != modeLive {
		return
	}
	l.emit([]core.Event{l.m.entry(core.KindHarnessEvent, "malformed", core.HarnessEventPayload{
		Type: "malformed_line", Line: string(line), Error: err.Error()})})
}

// Prompt runs one turn with session/prompt. Text and image blocks are
// accepted (images only when the agent advertises them).
func (l *live) Prompt(ctx context.Context, content []core.Content) (core.TurnResult, error) {
	blocks, err := l.blocks(content)
	if err != nil {
		return core.TurnResult{}, err
	}
	return l.run(ctx, blocks)
}

func (l *live) blocks(content []core.Content) ([]contentBlock, error) {
	if len(content) == 0 {
		return nil, core.Errorf(core.CodeInvalid, "acp: empty prompt")
	}
	var out []contentBlock
	for i, c := range content {
		switch c.Type {
		case "text":
			out = append(out, contentBlock{Type: "text", Text: c.Text})
		case "image":
			if !l.a.init.AgentCapabilities.PromptCapabilities.Image {
				return nil, core.Errorf(core.CodeUnsupported, "acp: the agent does not accept images (promptCapabilities.image)")
			}
			out = append(out, contentBlock{Type: "image", MimeType: c.MediaType, Data: c.Data})
		default:
			return nil, core.Errorf(core.CodeInvalid, "acp: prompt block %d has unknown type %q", i, c.Type)
		}
	}
	return out, nil
}

// run sends session/prompt and waits for its stop reason. The turn's last
// message is flushed before run returns; if ctx ends first, the wait is
// abandoned (not the turn) and the flush happens when the turn ends.
func (l *live) run(ctx context.Context, blocks []contentBlock) (core.TurnResult, error) {
	l.turn.Lock()
	defer l.turn.Unlock()
	l.mu.Lock()
	closed, sid := l.closed, l.NativeID()
	l.mu.Unlock()
	if closed {
		return core.TurnResult{}, core.Errorf(core.CodeUnavailable, "acp: session %s is closed", sid)
	}
	select {
	case <-l.a.done:
		return core.TurnResult{}, core.Errorf(core.CodeUnavailable, "acp: agent process of session %s has ended", sid)
	default:
	}
	_, ch, err := l.a.conn.start("session/prompt", promptParams{SessionID: sid, Prompt: blocks})
	if err != nil {
		return core.TurnResult{}, core.E(core.CodeHarness, "acp: session/prompt", err)
	}
	select {
	case r := <-ch:
		l.endTurn(r.Result)
		if r.Err != nil {
			var re *rpcError
			if errors.As(r.Err, &re) {
				return core.TurnResult{}, core.E(core.CodeHarness, "acp: the agent failed the prompt", r.Err)
			}
			return core.TurnResult{}, core.E(core.CodeHarness, "acp: session/prompt: agent process ended"+l.a.tailNote(), r.Err)
		}
		var res promptResult
		if err := json.Unmarshal(r.Result, &res); err != nil || res.StopReason == "" {
			return core.TurnResult{}, core.Errorf(core.CodeHarness, "acp: session/prompt result has no stopReason: %s", r.Result)
		}
		if u := res.Usage; u != nil {
			l.mu.Lock()
			l.usage = &core.TokenUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
				CacheReadTokens: u.CachedReadTokens, CacheCreationTokens: u.CachedWriteTokens}
			l.mu.Unlock()
		}
		return core.TurnResult{StopReason: res.StopReason}, nil
	case <-ctx.Done():
		go func() {
			r := <-ch
			l.endTurn(r.Result)
		}()
		return core.TurnResult{}, core.E(core.CodeCancelled, "acp: stopped waiting for the turn", ctx.Err())
	}
}

// endTurn records the end of a turn whose session/prompt result is result
// (nil when it failed): its last message and its usage.
func (l *live) endTurn(result json.RawMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.emit(l.m.endTurn())
	l.emit(l.m.turnUsage(result, currentModel(&l.setup)))
	l.h.learnSession(l.m, nil)
}

// Cancel sends the session/cancel notification; the running turn ends with
// stopReason cancelled.
func (l *live) Cancel(ctx context.Context) error {
	sid := l.NativeID()
	if err := l.a.conn.notify("session/cancel", sessionParams{SessionID: sid}); err != nil {
		return core.E(core.CodeHarness, "acp: session/cancel", err)
	}
	return nil
}

// SelectModel switches the model through the session's model config option
// (session/set_config_option) or, for agents that offer the unstable models
// state, session/set_model. ACP has no reasoning effort.
func (l *live) SelectModel(ctx context.Context, model, effort string) error {
	if effort != "" {
		return unsupported("ACP has no reasoning effort setting")
	}
	if model == "" {
		return nil
	}
	l.mu.Lock()
	setup, sid := l.setup, l.NativeID()
	l.mu.Unlock()
	var err error
	switch opt := modelOption(&setup); {
	case opt != nil:
		_, err = l.a.call(ctx, "session/set_config_option", setConfigOptionParams{SessionID: sid, ConfigID: opt.ID, Value: model})
	case setup.Models != nil:
		_, err = l.a.call(ctx, "session/set_model", setModelParams{SessionID: sid, ModelID: model})
	default:
		return unsupported("the agent offers no model selection for this session")
	}
	if err != nil {
		return fmt.Errorf("acp: select model %q: %w", model, err)
	}
	l.mu.Lock()
	if l.setup.Models != nil {
		l.setup.Models.CurrentModelID = model
	}
	l.sink(core.Event{Model: model})
	l.mu.Unlock()
	return nil
}

// Rename is not part of ACP.
func (l *live) Rename(ctx context.Context, title string) error {
	return unsupported("ACP has no client-side session rename")
}

// Compact sends the agent's own compact command as the prompt
// "/compact <focus>", only when this session's agent advertised a command
// named compact. The focus counts as applied when the command takes input
// (its available command has an input hint: free-form text the agent hands
// to its summariser); for a command without input the focus is not sent and
// the result says so. The context.compacted entry comes from the agent's
// compaction_update, if it sends one.
func (l *live) Compact(ctx context.Context, focus string) (core.CompactResult, error) {
	l.mu.Lock()
	cmd, ok := l.m.compactCommand()
	l.mu.Unlock()
	if !ok {
		return core.CompactResult{}, unsupported("the agent advertised no compact command")
	}
	if !l.h.canCompact() {
		return core.CompactResult{}, unsupported("the agent reports no compaction over ACP (no sessionCapabilities.compaction, no compaction_update seen), so Bridge could not record one")
	}
	_, takesInput := cmd.hint()
	text := "/" + cmd.Name
	res := core.CompactResult{}
	switch {
	case focus != "" && takesInput:
		text += " " + focus
		res.FocusApplied = true
	case focus != "":
		res.FocusNote = "the agent's compact command takes no input; the focus was not sent"
	}
	tr, err := l.run(ctx, []contentBlock{{Type: "text", Text: text}})
	if err != nil {
		return core.CompactResult{}, err
	}
	if tr.StopReason != "end_turn" {
		return core.CompactResult{}, core.Errorf(core.CodeHarness, "acp: /compact ended with stop reason %q", tr.StopReason)
	}
	return res, nil
}

// Done is closed when the agent process has ended.
func (l *live) Done() <-chan struct{} { return l.a.done }

// Exit tells how the agent process ended: its exit code and the last 2 KB
// of its stderr.
func (l *live) Exit() core.ExitInfo { return l.a.exitInfo() }

// Close ends the agent process (stdin closed, then SIGTERM, then SIGKILL)
// and waits for it.
func (l *live) Close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.a.stop(ctx)
	// When ctx ended first the group got SIGKILL; wait (bounded) for the
	// process to be reaped so that Done is closed once Close returns.
	t := time.NewTimer(killWait)
	defer t.Stop()
	select {
	case <-l.a.done:
		return nil
	case <-t.C:
		return core.Errorf(core.CodeHarness, "acp: the agent process did not exit %v after SIGKILL", killWait)
	}
}

// killWait bounds how long Close waits for a killed agent to be reaped.
const killWait = 10 * time.Second
