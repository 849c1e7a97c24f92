package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
	"github.com/bridge-dev/bridge/core"
)

// closeGrace is how long Close waits after closing stdin before it kills
// the process.
const closeGrace = 5 * time.Second

// live is one long-lived `claude -p --input-format stream-json` process.
// It implements core.Live and core.Compactor.
type live struct {
	host *Host // started it; forks are started the same way
	proc *procutil.Process
	sink core.EventSink
	req  core.CreateRequest // the preset and approver permission requests go to
	asks asks               // can_use_tool requests being decided

	wmu   sync.Mutex // serialises writes to stdin
	stdin io.WriteCloser

	turnMu sync.Mutex // one turn (prompt or compact) at a time

	evidence *evidence // used by the reader goroutine only

	mu          sync.Mutex
	nativeID    string
	model       string
	turn        chan *streamMsg // receives the result line of the running turn
	cancelled   bool            // Cancel was called during the running turn
	orphans     int             // abandoned turns whose result is still to come
	boundaries  int             // compact_boundary lines seen
	pending     map[string]chan controlResult
	lastResult  *streamMsg // the last result line seen
	initSession string     // session_id of the first system/init
	// selModel and selEffort are what SelectModel switched to; a fork
	// starts with them.
	selModel, selEffort string

	echoes echoes // user lines written, until Claude Code replays them

	reqSeq  atomic.Int64
	million atomic.Bool // the model was asked for with the "[1m]" suffix

	done <-chan struct{}
	exit core.ExitInfo
}

// controlResult is the answer to a control request.
type controlResult struct {
	resp json.RawMessage
	err  error
}

// startLive starts the program spec describes (its Path, Args, Dir and
// Env) and begins reading its stdout.
func startLive(spec procutil.Spec, req core.CreateRequest, sink core.EventSink) (*live, error) {
	if sink == nil {
		sink = func(core.Event) {}
	}
	// The sink is called from the reader and, once, from the starter
	// (NativeSessionID); never at the same time.
	var smu sync.Mutex
	user := sink
	sink = func(ev core.Event) {
		smu.Lock()
		defer smu.Unlock()
		user(ev)
	}
	l := &live{req: req, sink: sink, pending: map[string]chan controlResult{}, evidence: newEvidence()}
	model := req.Model
	if model == "" {
		model = req.Preset.Model
	}
	l.million.Store(strings.HasSuffix(strings.ToLower(model), "[1m]"))
	spec.Stdin = true
	spec.Setup = func(p *procutil.Process) { l.stdin = p.Stdin }
	// The end of output, a read error or an endless line all end the
	// session; the exit tells how the process ended.
	spec.Stdout = func(r io.Reader) { _ = procutil.ReadLines(r, l.handleLine) }
	spec.Exited = l.exited
	p, err := procutil.Start(spec)
	if err != nil {
		return nil, core.E(core.CodeUnavailable, "claude-code: cannot start "+spec.Path, err)
	}
	l.proc, l.done = p, p.Done()
	return l, nil
}

// exited records how the process ended and fails what was waiting on it.
func (l *live) exited(info core.ExitInfo) {
	l.asks.cancelAll()
	l.mu.Lock()
	l.exit = info
	for id, ch := range l.pending {
		ch <- controlResult{err: l.exitErr(info)}
		delete(l.pending, id)
	}
	l.mu.Unlock()
}

// exitErr describes the process's end as a harness error.
func (l *live) exitErr(info core.ExitInfo) error {
	msg := fmt.Sprintf("claude-code: process exited (code %d)", info.Code)
	if t := strings.TrimSpace(info.StderrTail); t != "" {
		msg += ": " + lastLines(t, 5)
	}
	return core.Errorf(core.CodeHarness, "%s", msg)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	parts := strings.Split(strings.TrimSpace(s), "\n")
	if len(parts) > n {
		parts = parts[len(parts)-n:]
	}
	return strings.Join(parts, "\n")
}

// handleLine decodes and dispatches one stdout line. It never panics on
// bad input: a line that is not JSON is kept as a harness.event.
func (l *live) handleLine(raw []byte) {
	var m streamMsg
	if err := json.Unmarshal(raw, &m); err != nil {
		l.sink(core.Event{Entry: harnessEvent("malformed", lineID(raw), raw)})
		return
	}
	switch m.Type {
	case "control_response":
		l.controlAnswer(&m)
		return
	case "control_request":
		l.permissionRequest(&m, raw)
		return
	case "control_cancel_request":
		l.asks.cancel(m.RequestID)
		return
	case "user":
		if m.IsReplay && l.echoes.take(&m) {
			return // the echo of a line Bridge wrote (see steer.go)
		}
	}
	for _, ev := range l.evidence.add(mapStream(&m, raw)) {
		if ev.Model != "" && l.million.Load() && !strings.HasSuffix(ev.Model, "[1m]") {
			// system/init names the model without the 1M-window suffix
			// it was asked for; the record keeps what runs.
			ev.Model += "[1m]"
		}
		l.sink(ev)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case m.Type == "system" && m.Subtype == "init":
		if l.initSession == "" {
			l.initSession = m.SessionID
		}
		if m.SessionID != "" {
			l.nativeID = m.SessionID
		}
		if m.Model != "" {
			l.model = m.Model
		}
	case m.Type == "system" && m.Subtype == "compact_boundary":
		l.boundaries++
	case m.Type == "result":
		l.lastResult = &m
		switch {
		case l.orphans > 0:
			// The result of a turn whose caller stopped waiting.
			l.orphans--
		case l.turn != nil && l.echoes.steersPending() > 0:
			// A steered message arrived too late for this turn: Claude
			// Code runs it as a turn of its own, which the caller's
			// Prompt waits for too (see steer.go).
		case l.turn != nil:
			l.turn <- &m
			l.turn = nil
		}
	}
}

// controlAnswer routes a control_response to its waiting request.
func (l *live) controlAnswer(m *streamMsg) {
	if m.Response == nil {
		return
	}
	l.mu.Lock()
	ch, ok := l.pending[m.Response.RequestID]
	delete(l.pending, m.Response.RequestID)
	l.mu.Unlock()
	if !ok {
		return
	}
	if m.Response.Subtype == "error" {
		ch <- controlResult{err: core.Errorf(core.CodeHarness, "claude-code: %s", m.Response.Error)}
		return
	}
	ch <- controlResult{resp: m.Response.Response}
}

// writeJSON writes v as one line on stdin.
func (l *live) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("claude-code: encode input: %w", err)
	}
	b = append(b, '\n')
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if _, err := l.stdin.Write(b); err != nil {
		return core.E(core.CodeHarness, "claude-code: write to the process failed", err)
	}
	return nil
}

// control sends a control request and waits for its response.
func (l *live) control(ctx context.Context, request controlRequest) (json.RawMessage, error) {
	id := fmt.Sprintf("bridge-%d", l.reqSeq.Add(1))
	ch := make(chan controlResult, 1)
	l.mu.Lock()
	select {
	case <-l.done:
		l.mu.Unlock()
		return nil, l.exitErr(l.exit)
	default:
	}
	l.pending[id] = ch
	l.mu.Unlock()
	if err := l.writeJSON(controlRequestLine{Type: "control_request", RequestID: id, Request: request}); err != nil {
		l.mu.Lock()
		delete(l.pending, id)
		l.mu.Unlock()
		return nil, err
	}
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		l.mu.Lock()
		delete(l.pending, id)
		l.mu.Unlock()
		return nil, core.E(core.CodeCancelled, "claude-code: control request abandoned", errors.Join(core.ErrCancelled, ctx.Err()))
	}
}

// NativeID returns the Claude Code session id.
func (l *live) NativeID() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nativeID
}

// userLine builds the stream-json user message for content. A single text
// block is sent as a plain string so slash commands are dispatched.
func userLine(content []core.Content) (userMessageLine, error) {
	var blocks []any
	for _, c := range content {
		switch c.Type {
		case "text", "":
			blocks = append(blocks, textBlock{Type: "text", Text: c.Text})
		case "image":
			blocks = append(blocks, imageBlock{Type: "image", Source: imageSource{
				Type: "base64", MediaType: c.MediaType, Data: c.Data}})
		default:
			return userMessageLine{}, core.Errorf(core.CodeInvalid, "claude-code: content type %q is not supported", c.Type)
		}
	}
	if len(blocks) == 0 {
		return userMessageLine{}, core.Errorf(core.CodeInvalid, "claude-code: empty prompt")
	}
	var msg any = blocks
	if t, ok := blocks[0].(textBlock); ok && len(blocks) == 1 {
		msg = t.Text
	}
	return userMessageLine{Type: "user", Message: userMessage{Role: "user", Content: msg}}, nil
}

// runTurn writes a user line and waits for the turn's result line.
func (l *live) runTurn(ctx context.Context, content []core.Content) (*streamMsg, bool, error) {
	line, err := userLine(content)
	if err != nil {
		return nil, false, err
	}
	l.turnMu.Lock()
	defer l.turnMu.Unlock()
	ch := make(chan *streamMsg, 1)
	l.mu.Lock()
	select {
	case <-l.done:
		l.mu.Unlock()
		return nil, false, l.exitErr(l.exit)
	default:
	}
	l.turn, l.cancelled = ch, false
	l.mu.Unlock()
	clear := func(written bool) {
		l.mu.Lock()
		if l.turn == ch {
			l.turn = nil
			if written {
				l.orphans++
			}
		}
		l.mu.Unlock()
	}
	l.echoes.expect(line, false)
	if err := l.writeJSON(line); err != nil {
		l.echoes.forget(line)
		clear(false)
		return nil, false, err
	}
	select {
	case m := <-ch:
		l.mu.Lock()
		c := l.cancelled
		l.mu.Unlock()
		return m, c, nil
	case <-l.done:
		clear(false)
		return nil, false, l.exitErr(l.Exit())
	case <-ctx.Done():
		clear(true)
		return nil, false, core.E(core.CodeCancelled, "claude-code: stopped waiting for the turn", errors.Join(core.ErrCancelled, ctx.Err()))
	}
}

// Prompt runs one turn.
func (l *live) Prompt(ctx context.Context, content []core.Content) (core.TurnResult, error) {
	m, cancelled, err := l.runTurn(ctx, content)
	if err != nil {
		return core.TurnResult{}, err
	}
	return core.TurnResult{StopReason: stopReason(m, cancelled)}, nil
}

// stopReason maps a result line to a turn stop reason.
func stopReason(m *streamMsg, cancelled bool) string {
	switch {
	case cancelled:
		return "cancelled"
	case m.IsError || strings.HasPrefix(m.Subtype, "error"):
		switch m.Subtype {
		case "error_max_turns":
			return "max_turns"
		case "error_max_budget_usd":
			return "max_budget"
		}
		return "error"
	case m.StopReason != nil && *m.StopReason != "":
		return *m.StopReason
	}
	return "end_turn"
}

// Cancel interrupts the running turn with the interrupt control request.
func (l *live) Cancel(ctx context.Context) error {
	l.mu.Lock()
	if l.turn != nil {
		l.cancelled = true
	}
	l.mu.Unlock()
	_, err := l.control(ctx, controlRequest{Subtype: "interrupt"})
	return err
}

// SelectModel switches the model (set_model) and the effort
// (apply_flag_settings effortLevel).
func (l *live) SelectModel(ctx context.Context, model, effort string) error {
	if model == "" && effort == "" {
		return core.Errorf(core.CodeInvalid, "claude-code: no model or effort given")
	}
	if model != "" {
		if _, err := l.control(ctx, controlRequest{Subtype: "set_model", Model: model}); err != nil {
			return err
		}
		l.mu.Lock()
		l.model, l.selModel = model, model
		l.mu.Unlock()
		l.million.Store(strings.HasSuffix(strings.ToLower(model), "[1m]"))
	}
	if effort != "" {
		if _, err := l.control(ctx, controlRequest{Subtype: "apply_flag_settings",
			Settings: &flagSettings{EffortLevel: effort}}); err != nil {
			return err
		}
		l.mu.Lock()
		l.selEffort = effort
		l.mu.Unlock()
	}
	return nil
}

// Rename names the session with the rename_session control request; Claude
// Code stores it as the transcript's custom title.
func (l *live) Rename(ctx context.Context, title string) error {
	if strings.TrimSpace(title) == "" {
		return core.Errorf(core.CodeInvalid, "claude-code: empty title")
	}
	_, err := l.control(ctx, controlRequest{Subtype: "rename_session", Title: title})
	return err
}

// Compact sends `/compact <focus>` and returns once the turn ends with a
// compact_boundary delivered to the sink. Claude Code passes the focus to
// its summariser as custom instructions.
func (l *live) Compact(ctx context.Context, focus string) (core.CompactResult, error) {
	text := "/compact"
	if f := strings.TrimSpace(focus); f != "" {
		text += " " + strings.ReplaceAll(f, "\n", " ")
	}
	l.mu.Lock()
	before := l.boundaries
	l.mu.Unlock()
	m, _, err := l.runTurn(ctx, []core.Content{{Type: "text", Text: text}})
	if err != nil {
		return core.CompactResult{}, err
	}
	l.mu.Lock()
	after := l.boundaries
	l.mu.Unlock()
	if after == before {
		why := strings.Join(m.Errors, "; ")
		if why == "" {
			why = m.Result
		}
		if why == "" {
			why = "no compact_boundary was reported"
		}
		return core.CompactResult{}, core.Errorf(core.CodeHarness, "claude-code: /compact did not compact: %s", why)
	}
	return core.CompactResult{FocusApplied: strings.TrimSpace(focus) != ""}, nil
}

// Done is closed when the process has ended.
func (l *live) Done() <-chan struct{} { return l.done }

// Exit tells how the process ended.
func (l *live) Exit() core.ExitInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.exit
}

// Close closes stdin, waits for the process to end, and kills its process
// group if it does not within closeGrace or ctx.
func (l *live) Close(ctx context.Context) error {
	l.wmu.Lock()
	l.stdin.Close()
	l.wmu.Unlock()
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-l.done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	l.kill()
	<-l.done
	return nil
}

// kill ends the process group.
func (l *live) kill() { l.proc.Signal(true) }

// initialize sends the initialize control request that the Agent SDK sends
// first; it makes the CLI load its settings (and, with --resume, the
// stored conversation) without starting a turn.
func (l *live) initialize(ctx context.Context) (json.RawMessage, error) {
	return l.control(ctx, controlRequest{Subtype: "initialize"})
}

var (
	_ core.Live      = (*live)(nil)
	_ core.Compactor = (*live)(nil)
	_ core.Forker    = (*live)(nil)
)
