package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/pending"
	"github.com/bridge-dev/bridge/core"
)

// live is one OpenCode session driven through the shared server.
type live struct {
	h    *Host
	srv  *server
	id   string
	dir  string
	sink core.EventSink

	evMu   sync.Mutex // serialises event handling (mapper and sink)
	mapper *eventMapper

	perms pending.Set // permission requests being decided; permission.replied withdraws one

	mu                              sync.Mutex
	req                             core.CreateRequest // the approver permission requests go to
	provider, model, agent, variant string
	wait                            *turnWait

	turnMu    sync.Mutex // one prompt or compaction at a time
	closed    chan struct{}
	closeOnce sync.Once
	done      chan struct{}
}

var (
	_ core.Live      = (*live)(nil)
	_ core.Compactor = (*live)(nil)
)

// turnWait follows one prompt or compaction on the event stream. The turn
// is over at a session.idle that follows a sign of this turn's work (busy,
// retry, an error, or the server's answer): the server may repeat the
// previous turn's idle.
type turnWait struct {
	active    bool
	idle      chan struct{}
	idleOnce  sync.Once
	compacted chan struct{}
	compOnce  sync.Once
	apiErr    *apiError
}

// finish ends the wait; the stream and a resync may both call it.
func (w *turnWait) finish() { w.idleOnce.Do(func() { close(w.idle) }) }

func (h *Host) newLive(s *server, id, dir string, sink core.EventSink) *live {
	if sink == nil {
		sink = func(core.Event) {}
	}
	l := &live{h: h, srv: s, id: id, dir: dir, sink: sink, mapper: newEventMapper(id),
		closed: make(chan struct{}), done: make(chan struct{})}
	l.mapper.limit = h.contextLimit
	// Read the models' limits now, off the event stream, so that the first
	// finished step's gauge does not wait for them.
	go h.contextLimit("")
	h.register(l)
	go func() {
		select {
		case <-s.done:
		case <-l.closed:
		}
		h.unregister(l)
		close(l.done)
	}()
	return l
}

// NativeID returns OpenCode's session id (ses_…).
func (l *live) NativeID() string { return l.id }

// onEvent maps one event of this session to the sink and advances a waiting
// turn. It runs on the event stream's goroutine.
func (l *live) onEvent(ev event) {
	l.evMu.Lock()
	for _, e := range l.mapper.handle(ev) {
		l.sink(e)
	}
	l.evMu.Unlock()
	l.permissionEvent(ev)
	l.questionEvent(ev)

	l.mu.Lock()
	w := l.wait
	l.mu.Unlock()
	if w == nil {
		return
	}
	switch ev.Type {
	case "session.status":
		var p struct {
			Status struct {
				Type string `json:"type"`
			} `json:"status"`
		}
		_ = json.Unmarshal(ev.Properties, &p)
		if p.Status.Type == "busy" || p.Status.Type == "retry" {
			l.mark(w, nil)
		}
	case "session.error":
		var p struct {
			Error *apiError `json:"error"`
		}
		_ = json.Unmarshal(ev.Properties, &p)
		if p.Error == nil {
			p.Error = &apiError{Name: "UnknownError"}
		}
		l.mark(w, p.Error)
	case "session.compacted":
		l.mark(w, nil)
		w.compOnce.Do(func() { close(w.compacted) })
	case "session.idle":
		l.mu.Lock()
		active := w.active
		l.mu.Unlock()
		if active {
			w.finish()
		}
	}
}

func (l *live) mark(w *turnWait, e *apiError) {
	l.mu.Lock()
	w.active = true
	if e != nil {
		w.apiErr = e
	}
	l.mu.Unlock()
}

// resync runs after the event stream (re)connects: a turn that may have
// missed its idle event asks the server whether the session is still busy.
func (l *live) resync() {
	l.mu.Lock()
	w := l.wait
	l.mu.Unlock()
	if w == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(l.srv.ctx, 5*time.Second)
		defer cancel()
		var status map[string]struct {
			Type string `json:"type"`
		}
		if err := l.h.do(ctx, l.srv, http.MethodGet, "/session/status", nil, nil, &status); err != nil {
			return
		}
		if st, busy := status[l.id]; !busy || st.Type == "idle" {
			l.mu.Lock()
			active := w.active
			l.mu.Unlock()
			if active {
				w.finish()
			}
		}
	}()
}

// usable refuses calls on a closed session or a dead server.
func (l *live) usable() error {
	select {
	case <-l.closed:
		return core.Errorf(core.CodeInvalid, "opencode: session %s is closed", l.id)
	default:
	}
	if l.srv.dead() {
		return core.E(core.CodeHarness, "opencode: session "+l.id, l.srv.exitError())
	}
	return nil
}

func (l *live) path(suffix string) string { return "/session/" + url.PathEscape(l.id) + suffix }

// call runs one request in the background, bound to the server's lifetime
// rather than the caller's context, and waits for it, the caller, the
// server's death or Close.
func (l *live) call(ctx context.Context, method, path string, in, out any) error {
	errc := make(chan error, 1)
	go func() { errc <- l.h.do(l.srv.ctx, l.srv, method, path, dirQuery(l.dir), in, out) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return core.E(core.CodeCancelled, "opencode: stopped waiting for the server", errors.Join(core.ErrCancelled, ctx.Err()))
	case <-l.srv.done:
		return l.srv.exitError()
	case <-l.closed:
		return core.E(core.CodeCancelled, "opencode: session closed", core.ErrCancelled)
	}
}

// begin installs a fresh turn waiter.
func (l *live) begin() *turnWait {
	w := &turnWait{idle: make(chan struct{}), compacted: make(chan struct{})}
	l.mu.Lock()
	l.wait = w
	l.mu.Unlock()
	return w
}

func (l *live) end() {
	l.mu.Lock()
	l.wait = nil
	l.mu.Unlock()
}

// settle waits (at most TurnGrace) for the stream to deliver the end of a
// turn the server already reported finished, so the sink has every entry
// before the caller returns.
func (l *live) settle(ctx context.Context, signal <-chan struct{}) {
	t := time.NewTimer(l.h.cfg.TurnGrace)
	defer t.Stop()
	select {
	case <-signal:
	case <-t.C:
	case <-ctx.Done():
	case <-l.srv.done:
	case <-l.closed:
	}
}

// promptParts converts Bridge content to OpenCode part inputs.
func promptParts(content []core.Content) ([]partInput, error) {
	var parts []partInput
	for i, c := range content {
		switch c.Type {
		case "text", "":
			parts = append(parts, partInput{Type: "text", Text: c.Text})
		case "image":
			mt := c.MediaType
			if mt == "" {
				mt = "image/png"
			}
			parts = append(parts, partInput{Type: "file", Mime: mt, Filename: "image",
				URL: "data:" + mt + ";base64," + c.Data})
		default:
			return nil, core.Errorf(core.CodeInvalid, "opencode: content block %d has unknown type %q", i, c.Type)
		}
	}
	if len(parts) == 0 {
		return nil, core.Errorf(core.CodeInvalid, "opencode: a prompt needs at least one content block")
	}
	return parts, nil
}

// Prompt runs one turn (POST /session/{id}/message, which answers when the
// turn is over) and returns after the turn's events reached the sink. A turn
// that ended in a model or provider error returns StopReason "error" and a
// harness error with OpenCode's own text; an aborted turn "cancelled".
func (l *live) Prompt(ctx context.Context, content []core.Content) (core.TurnResult, error) {
	res, _, err := l.prompt(ctx, content)
	return res, err
}

// prompt is Prompt, also returning the server's assistant message.
func (l *live) prompt(ctx context.Context, content []core.Content) (core.TurnResult, messageInfo, error) {
	if err := l.usable(); err != nil {
		return core.TurnResult{}, messageInfo{}, err
	}
	parts, err := promptParts(content)
	if err != nil {
		return core.TurnResult{}, messageInfo{}, err
	}
	l.turnMu.Lock()
	defer l.turnMu.Unlock()
	l.mu.Lock()
	body := promptBody{Parts: parts, Agent: l.agent, Variant: l.variant}
	if l.provider != "" && l.model != "" {
		body.Model = &promptModel{ProviderID: l.provider, ModelID: l.model}
	}
	l.mu.Unlock()
	w := l.begin()
	defer l.end()
	var resp struct {
		Info messageInfo `json:"info"`
	}
	if err := l.call(ctx, http.MethodPost, l.path("/message"), body, &resp); err != nil {
		return core.TurnResult{}, messageInfo{}, domainError(l.srv, "prompt", err)
	}
	l.mark(w, nil)
	l.settle(ctx, w.idle)
	l.mu.Lock()
	apiErr := w.apiErr
	l.mu.Unlock()
	if resp.Info.Error != nil {
		apiErr = resp.Info.Error
	}
	if apiErr != nil {
		if apiErr.Name == "MessageAbortedError" {
			return core.TurnResult{StopReason: "cancelled"}, resp.Info, nil
		}
		return core.TurnResult{StopReason: "error"}, resp.Info, core.Errorf(core.CodeHarness, "opencode: turn failed: %s", apiErr.String())
	}
	return core.TurnResult{StopReason: stopReason(resp.Info.Finish)}, resp.Info, nil
}

// stopReason maps an assistant message's finish to Bridge's stop reasons.
func stopReason(finish string) string {
	switch finish {
	case "", "stop":
		return "end_turn"
	case "length":
		return "max_tokens"
	case "tool-calls":
		return "tool_use"
	}
	return finish
}

// Cancel aborts the running turn (POST /session/{id}/abort).
func (l *live) Cancel(ctx context.Context) error {
	if err := l.usable(); err != nil {
		return err
	}
	if err := l.h.do(ctx, l.srv, http.MethodPost, l.path("/abort"), dirQuery(l.dir), nil, nil); err != nil {
		return domainError(l.srv, "abort", err)
	}
	return nil
}

// SelectModel sets the model ("provider/model", or a bare model id for the
// current provider) and effort (OpenCode's model variant) of later turns.
func (l *live) SelectModel(ctx context.Context, model, effort string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if model != "" {
		p, m := splitModel(model)
		if p == "" {
			p = l.provider
		}
		if p == "" {
			return core.Errorf(core.CodeInvalid, "opencode: model %q needs a provider (provider/model)", model)
		}
		l.provider, l.model = p, m
	}
	if effort != "" {
		l.variant = effort
	}
	return nil
}

// Rename renames the session (PATCH /session/{id} {title}).
func (l *live) Rename(ctx context.Context, title string) error {
	if err := l.usable(); err != nil {
		return err
	}
	if err := l.h.do(ctx, l.srv, http.MethodPatch, l.path(""), dirQuery(l.dir), renameBody{Title: title}, nil); err != nil {
		return domainError(l.srv, "rename", err)
	}
	return nil
}

// Done is closed when the server process has exited or the session was
// closed.
func (l *live) Done() <-chan struct{} { return l.done }

// Exit reports how the server process ended (zero after Close while the
// server still runs).
func (l *live) Exit() core.ExitInfo {
	if l.srv.dead() {
		return l.srv.exit
	}
	return core.ExitInfo{}
}

// Close detaches the session from the shared server; the server keeps
// running for the Host's other sessions (Host.Close stops it).
func (l *live) Close(ctx context.Context) error {
	l.closeOnce.Do(func() { close(l.closed) })
	select {
	case <-l.done:
	case <-ctx.Done():
		return core.E(core.CodeCancelled, "opencode: close", ctx.Err())
	}
	return nil
}

// compactModel finds the provider and model summarize needs: the session's
// selected model, the model its last reply used, the session's stored
// model, then the server's configured default.
func (l *live) compactModel(ctx context.Context) (string, string, error) {
	l.mu.Lock()
	p, m := l.provider, l.model
	l.mu.Unlock()
	if p != "" && m != "" {
		return p, m, nil
	}
	l.evMu.Lock()
	seen := l.mapper.model
	l.evMu.Unlock()
	if p, m := splitModel(seen); p != "" && m != "" {
		return p, m, nil
	}
	var info sessionInfo
	if err := l.h.do(ctx, l.srv, http.MethodGet, l.path(""), nil, nil, &info); err == nil && info.Model != nil && info.Model.ProviderID != "" {
		return info.Model.ProviderID, info.Model.ID, nil
	}
	var cfg struct {
		Model string `json:"model"`
	}
	if err := l.h.do(ctx, l.srv, http.MethodGet, "/config", dirQuery(l.dir), nil, &cfg); err != nil {
		return "", "", domainError(l.srv, "read config for summarize", err)
	}
	if p, m := splitModel(cfg.Model); p != "" && m != "" {
		return p, m, nil
	}
	return "", "", core.Errorf(core.CodeUnavailable, "opencode: summarize needs a model and none is selected or configured")
}

// Compact asks OpenCode to summarise the session (POST
// /session/{id}/summarize {providerID, modelID, auto:false}) and returns once
// the session.compacted event reached the sink as context.compacted.
// Summarize takes no focus: a focus is reported as not applied.
func (l *live) Compact(ctx context.Context, focus string) (core.CompactResult, error) {
	if err := l.usable(); err != nil {
		return core.CompactResult{}, err
	}
	p, m, err := l.compactModel(ctx)
	if err != nil {
		return core.CompactResult{}, err
	}
	l.turnMu.Lock()
	defer l.turnMu.Unlock()
	w := l.begin()
	defer l.end()
	var ok bool
	if err := l.call(ctx, http.MethodPost, l.path("/summarize"),
		summarizeBody{ProviderID: p, ModelID: m, Auto: false}, &ok); err != nil {
		return core.CompactResult{}, domainError(l.srv, "summarize", err)
	}
	l.settle(ctx, w.compacted)
	l.mu.Lock()
	apiErr := w.apiErr
	l.mu.Unlock()
	if apiErr != nil {
		return core.CompactResult{}, core.Errorf(core.CodeHarness, "opencode: summarize failed: %s", apiErr.String())
	}
	res := core.CompactResult{FocusApplied: false}
	if focus != "" {
		res.FocusNote = "OpenCode's summarize command takes no focus; the session was summarised without it"
	}
	return res, nil
}
