// Package acp serves Bridge as an Agent Client Protocol (v1) agent:
// newline-delimited JSON-RPC 2.0 on stdio, the way editors (Zed, JetBrains,
// Neovim plugins) and command-line clients (acpx) launch agents. It is one
// more transport into the one service (schema.Backend, implemented by
// rpc/service): every ACP request becomes a call of the contract's methods,
// and every entry the service records becomes the session/update an ACP
// client draws. The Server is also the service's Notifier and
// PermissionAsker, so the harness's tool approvals reach the ACP client as
// session/request_permission.
package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/schema"
)

// ProtocolVersion is the ACP protocol version Bridge speaks.
const ProtocolVersion = 1

// Options configure the agent.
type Options struct {
	// Harness is the harness new sessions run on (session/new).
	Harness string
	// Preset and Model are those of new sessions ("" for the harness's
	// default).
	Preset, Model string
	// Version is Bridge's version, reported in agentInfo.
	Version string
	// Logger receives the agent's own log (stderr); nil discards it.
	Logger *slog.Logger
}

// Server is one ACP connection's agent side.
type Server struct {
	opts Options
	log  *slog.Logger
	c    *conn
	b    schema.Backend

	mu          sync.Mutex
	initialized bool
	compaction  bool                          // the client takes compaction_update
	sessions    map[string]*session           // the sessions this client opened
	inflight    map[string]context.CancelFunc // requests being served, by id
	queue       chan<- func()                 // requests in arrival order (Serve)
}

// session is one session the client opened (session/new, load, resume,
// fork): only these get session/update.
type session struct {
	mu   sync.Mutex // one session's updates go out in order
	view *view
	cwd  string
}

// New returns the agent side of a connection writing to w. Give it to the
// service as Notifier and PermissionAsker, then Serve.
func New(w io.Writer, o Options) *Server {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Server{opts: o, log: log, c: newConn(w), sessions: map[string]*session{},
		inflight: map[string]context.CancelFunc{}}
}

// Serve reads the client's messages from r and serves them with b until r
// ends (the client closed stdin) or ctx ends. Requests run concurrently;
// those still running when r ends are finished and answered, while
// requests Bridge itself awaits from the client (permissions) end at once,
// leaving the decision to the preset's policy. The caller then closes the
// service (its shutdown checkpoints).
func (s *Server) Serve(ctx context.Context, r io.Reader, b schema.Backend) error {
	s.b = b
	var wg sync.WaitGroup
	// Requests start in the order they arrive: one worker serves them one
	// at a time, except a prompt, which it starts and leaves running (a
	// turn is long, and the client cancels it or answers its permission
	// requests meanwhile). The reader never waits for a request, so the
	// replies to Bridge's own requests always get through.
	queue := make(chan func(), 4096)
	worker := make(chan struct{})
	go func() {
		defer close(worker)
		for f := range queue {
			f()
		}
	}()
	s.queue = queue
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		readErr <- readLines(r, func(line []byte) { lines <- line })
		close(lines)
	}()
	var err error
loop:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				err = <-readErr
				break loop
			}
			s.dispatch(ctx, line, &wg)
		case <-ctx.Done():
			err = ctx.Err()
			break loop
		}
	}
	close(queue)
	s.c.close()
	if ctx.Err() != nil {
		s.mu.Lock()
		for _, cancel := range s.inflight {
			cancel()
		}
		s.mu.Unlock()
	}
	<-worker
	wg.Wait()
	// What the service says while it closes (its shutdown checkpoints)
	// has nobody to read it.
	s.c.done.Store(true)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// dispatch routes one incoming line.
func (s *Server) dispatch(ctx context.Context, line []byte, wg *sync.WaitGroup) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		_ = s.c.replyError(nil, &rpcError{Code: codeParseError, Message: "parse error: " + err.Error()})
		return
	}
	switch {
	case m.Method == "" && len(m.ID) > 0:
		s.c.deliver(&m)
	case m.isRequest():
		rctx, cancel := context.WithCancel(ctx)
		key := string(m.ID)
		s.mu.Lock()
		s.inflight[key] = cancel
		s.mu.Unlock()
		wg.Add(1)
		run := func() {
			defer wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.inflight, key)
				s.mu.Unlock()
				cancel()
			}()
			s.serveRequest(rctx, &m)
		}
		if m.Method == "session/prompt" {
			s.queue <- func() { go run() }
		} else {
			s.queue <- run
		}
	case m.Method == "$/cancel_request":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			s.mu.Lock()
			cancel := s.inflight[string(p.RequestID)]
			s.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		}
	case m.Method == "session/cancel":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(m.Params, &p) == nil && p.SessionID != "" {
			wg.Add(1)
			s.queue <- func() {
				defer wg.Done()
				if _, err := s.b.SessionCancel(context.WithoutCancel(ctx), schema.SessionCancelParams{SessionID: p.SessionID}); err != nil {
					s.log.Warn("acp: session/cancel", "session", p.SessionID, "error", err)
				}
			}
		}
	case m.Method != "":
		s.log.Debug("acp: notification ignored", "method", m.Method)
	default:
		_ = s.c.replyError(m.ID, &rpcError{Code: codeInvalidRequest, Message: "not a JSON-RPC request, notification or response"})
	}
}

// handler serves one request's params and returns its result.
type handler func(s *Server, ctx context.Context, params json.RawMessage) (any, error)

// handlers are the agent methods Bridge serves.
var handlers = map[string]handler{
	"initialize":                (*Server).initialize,
	"authenticate":              func(*Server, context.Context, json.RawMessage) (any, error) { return struct{}{}, nil },
	"session/new":               (*Server).newSession,
	"session/load":              (*Server).loadSession,
	"session/resume":            (*Server).resumeSession,
	"session/prompt":            (*Server).prompt,
	"session/list":              (*Server).listSessions,
	"session/close":             (*Server).closeSession,
	"session/fork":              (*Server).forkSession,
	"session/set_config_option": (*Server).setConfigOption,
	"session/set_model":         (*Server).setModel,
}

// afterReply is work a handler leaves for after its reply is written (the
// commands of a new session are announced once the client knows its id).
type afterReply struct {
	result any
	then   func()
}

func (s *Server) serveRequest(ctx context.Context, m *message) {
	h, ok := handlers[m.Method]
	if !ok {
		_ = s.c.replyError(m.ID, &rpcError{Code: codeMethodNotFound, Message: fmt.Sprintf("method %q is not served by bridge acp", m.Method)})
		return
	}
	if m.Method != "initialize" && m.Method != "authenticate" {
		s.mu.Lock()
		ok := s.initialized
		s.mu.Unlock()
		if !ok {
			_ = s.c.replyError(m.ID, &rpcError{Code: codeInvalidRequest, Message: m.Method + ": initialize first"})
			return
		}
	}
	res, err := s.safeCall(ctx, h, m)
	if err != nil {
		_ = s.c.replyError(m.ID, s.wireError(m.Method, err))
		return
	}
	if a, ok := res.(afterReply); ok {
		_ = s.c.reply(m.ID, a.result)
		if a.then != nil {
			a.then()
		}
		return
	}
	_ = s.c.reply(m.ID, res)
}

// safeCall runs h, turning a panic into an internal error of this request.
func (s *Server) safeCall(ctx context.Context, h handler, m *message) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("acp: handler panicked", "method", m.Method, "panic", r)
			err = core.Errorf(core.CodeInternal, "%s: internal error", m.Method)
		}
	}()
	params := m.Params
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	return h(s, ctx, params)
}

// paramsError is a -32602 naming the problem with a request's params.
type paramsError struct{ msg string }

func (e paramsError) Error() string { return e.msg }

func badParams(format string, args ...any) error { return paramsError{fmt.Sprintf(format, args...)} }

// wireError maps an error to the JSON-RPC error the client gets: the one
// mapping of rpc.ErrorFor, with ACP's "resource not found" code for a
// session that does not exist.
func (s *Server) wireError(method string, err error) *rpcError {
	var pe paramsError
	if errors.As(err, &pe) {
		return &rpcError{Code: codeInvalidParams, Message: method + ": " + pe.msg}
	}
	we := rpc.ErrorFor(s.log, method, err)
	e := &rpcError{Code: we.Code, Message: we.Message, Data: we.Data}
	if core.ErrorCode(err) == core.CodeNotFound {
		e.Code = codeNotFound
	}
	return e
}

// decode reads params into v, naming the problem.
func decode(params json.RawMessage, v any) error {
	if err := json.Unmarshal(params, v); err != nil {
		return badParams("%v", err)
	}
	return nil
}

func (s *Server) initialize(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		ProtocolVersion    json.RawMessage `json:"protocolVersion"`
		ClientCapabilities struct {
			Session struct {
				Compaction json.RawMessage `json:"compaction"`
			} `json:"session"`
		} `json:"clientCapabilities"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if len(p.ProtocolVersion) == 0 {
		return nil, badParams("protocolVersion is required")
	}
	compaction := len(p.ClientCapabilities.Session.Compaction) > 0 && string(p.ClientCapabilities.Session.Compaction) != "null"
	s.mu.Lock()
	s.initialized = true
	s.compaction = compaction
	s.mu.Unlock()
	sessionCaps := map[string]any{"list": map[string]any{}, "resume": map[string]any{}, "close": map[string]any{}, "fork": map[string]any{}}
	if compaction {
		// Unstable ACP: a client that takes compaction reports is told of
		// each compaction the harness makes.
		sessionCaps["compaction"] = map[string]any{}
	}
	title := "Bridge"
	if s.opts.Harness != "" {
		title += " (" + s.opts.Harness + ")"
	}
	// A version the client proposes that Bridge does not speak is
	// answered with the one it does; the client decides.
	return map[string]any{
		"protocolVersion": ProtocolVersion,
		"agentCapabilities": map[string]any{
			"loadSession": true,
			// Every harness Bridge drives takes images in a prompt; embedded
			// resources are given to the harness as text.
			"promptCapabilities":  map[string]any{"image": true, "audio": false, "embeddedContext": true},
			"mcpCapabilities":     map[string]any{"http": false, "sse": false},
			"sessionCapabilities": sessionCaps,
		},
		"agentInfo":   map[string]any{"name": "bridge", "title": title, "version": s.opts.Version},
		"authMethods": []any{},
		"_meta":       map[string]any{"bridge": map[string]any{"harness": s.opts.Harness}},
	}, nil
}

// open marks a session as this client's, so its updates reach it.
func (s *Server) open(id, cwd string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil {
		ss = &session{view: newView(s.compaction), cwd: cwd}
		s.sessions[id] = ss
	}
	return ss
}

func (s *Server) opened(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// sessionSetup are the params of session/new, load, resume and fork.
type sessionSetup struct {
	SessionID  string            `json:"sessionId"`
	Cwd        string            `json:"cwd"`
	McpServers []json.RawMessage `json:"mcpServers"`
}

// setup reads the params of session/new, load, resume or fork (needID:
// the session is named).
func (s *Server) setup(params json.RawMessage, needID bool) (sessionSetup, error) {
	var p sessionSetup
	if err := decode(params, &p); err != nil {
		return p, err
	}
	if err := p.check(needID); err != nil {
		return p, err
	}
	s.warnMCP(p.McpServers)
	return p, nil
}

func (p sessionSetup) check(needID bool) error {
	if needID && p.SessionID == "" {
		return badParams("sessionId is required")
	}
	if p.Cwd != "" && !filepath.IsAbs(p.Cwd) {
		return badParams("cwd %q must be an absolute path", p.Cwd)
	}
	return nil
}

func (s *Server) newSession(ctx context.Context, params json.RawMessage) (any, error) {
	p, err := s.setup(params, false)
	if err != nil {
		return nil, err
	}
	if p.Cwd == "" {
		return nil, badParams("cwd is required")
	}
	if s.opts.Harness == "" {
		return nil, core.Errorf(core.CodeInvalid, "session/new: no harness: start bridge acp with --harness")
	}
	r, err := s.b.SessionCreate(ctx, schema.SessionCreateParams{Harness: s.opts.Harness, Cwd: p.Cwd,
		Preset: s.opts.Preset, Model: s.opts.Model})
	if err != nil {
		return nil, err
	}
	s.open(r.SessionID, p.Cwd)
	res := map[string]any{"sessionId": r.SessionID,
		"_meta": map[string]any{"bridge": map[string]any{"harness": r.Harness, "nativeSessionId": r.NativeSessionID}}}
	if opts := s.configOptions(ctx, r.SessionID); opts != nil {
		res["configOptions"] = opts
	}
	return afterReply{result: res, then: func() { s.announceCommands(r.SessionID) }}, nil
}

// warnMCP says that MCP servers the client offers are not handed on: each
// harness takes its own MCP configuration.
func (s *Server) warnMCP(servers []json.RawMessage) {
	if len(servers) > 0 {
		s.log.Warn("acp: the client's MCP servers are not passed to the harness; configure them in the harness", "count", len(servers))
	}
}

// restoreMeta is how a session came back, as _meta (a load or resume
// result, the restoration notice).
func restoreMeta(r service.Restored) map[string]any {
	m := map[string]any{"restoreMode": r.Mode}
	if r.Reason != "" {
		m["reason"] = r.Reason
	}
	if r.NativeError != "" {
		m["nativeError"] = r.NativeError
	}
	if r.CheckpointEntryID != "" {
		m["checkpointEntryId"] = r.CheckpointEntryID
	}
	return map[string]any{"bridge": m}
}

// loadSession replays the session's record as updates, then brings its
// harness back (hot, native or from a checkpoint), which the restoration
// notice says.
func (s *Server) loadSession(ctx context.Context, params json.RawMessage) (any, error) {
	p, err := s.setup(params, true)
	if err != nil {
		return nil, err
	}
	entries, err := s.wholeHistory(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	ss := s.open(p.SessionID, p.Cwd)
	ss.mu.Lock()
	ss.view = newView(s.compaction)
	for _, e := range entries {
		for _, u := range ss.view.updatesFor(e, true) {
			s.send(p.SessionID, u)
		}
	}
	ss.mu.Unlock()
	return s.resumeOpened(ctx, p.SessionID)
}

// resumeOpened resumes an opened session and answers load/resume.
func (s *Server) resumeOpened(ctx context.Context, id string) (any, error) {
	r, err := s.b.SessionResume(ctx, schema.SessionResumeParams{SessionID: id})
	if err != nil {
		return nil, err
	}
	res := map[string]any{"_meta": restoreMeta(service.Restored{SessionID: r.SessionID, Mode: string(r.Mode), Reason: r.Reason,
		NativeError: r.NativeError, CheckpointEntryID: r.CheckpointEntryID})}
	if opts := s.configOptions(ctx, id); opts != nil {
		res["configOptions"] = opts
	}
	return afterReply{result: res, then: func() { s.announceCommands(id) }}, nil
}

// wholeHistory reads a session's active branch, oldest first.
func (s *Server) wholeHistory(ctx context.Context, id string) ([]core.Entry, error) {
	var pages [][]schema.Entry
	var before *int64
	for {
		h, err := s.b.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: id, BeforeSeq: before, MaxMessages: 200})
		if err != nil {
			return nil, err
		}
		pages = append(pages, h.Entries)
		if !h.HasMore || len(h.Entries) == 0 {
			break
		}
		seq := h.Entries[0].Seq
		before = &seq
	}
	var out []core.Entry
	for i := len(pages) - 1; i >= 0; i-- {
		for _, e := range pages[i] {
			out = append(out, core.Entry{ID: e.ID, SessionID: e.SessionID, ParentID: e.ParentID, Seq: e.Seq,
				Kind: core.Kind(e.Kind), Payload: e.Payload, NativeID: e.NativeID, CreatedAt: e.CreatedAt})
		}
	}
	return out, nil
}

func (s *Server) resumeSession(ctx context.Context, params json.RawMessage) (any, error) {
	p, err := s.setup(params, true)
	if err != nil {
		return nil, err
	}
	s.open(p.SessionID, p.Cwd)
	return s.resumeOpened(ctx, p.SessionID)
}

func (s *Server) forkSession(ctx context.Context, params json.RawMessage) (any, error) {
	p, err := s.setup(params, true)
	if err != nil {
		return nil, err
	}
	r, err := s.b.SessionFork(ctx, schema.SessionForkParams{SessionID: p.SessionID, Cwd: p.Cwd})
	if err != nil {
		return nil, err
	}
	s.open(r.SessionID, p.Cwd)
	res := map[string]any{"sessionId": r.SessionID, "_meta": map[string]any{"bridge": map[string]any{
		"harness": r.Harness, "forkedFrom": r.Origin.SessionID, "forkedAt": r.Origin.EntryID}}}
	if opts := s.configOptions(ctx, r.SessionID); opts != nil {
		res["configOptions"] = opts
	}
	return afterReply{result: res, then: func() { s.announceCommands(r.SessionID) }}, nil
}

func (s *Server) listSessions(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		Cwd    string `json:"cwd"`
		Cursor string `json:"cursor"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	r, err := s.b.SessionList(ctx, schema.SessionListParams{Cursor: p.Cursor})
	if err != nil {
		return nil, err
	}
	out := []any{}
	for _, it := range r.Items {
		if p.Cwd != "" && filepath.Clean(it.Cwd) != filepath.Clean(p.Cwd) {
			continue
		}
		info := map[string]any{"sessionId": it.SessionID, "cwd": it.Cwd, "updatedAt": it.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
			"_meta": map[string]any{"bridge": map[string]any{"harness": it.Harness, "status": string(it.Status)}}}
		if it.Title != "" {
			info["title"] = it.Title
		}
		out = append(out, info)
	}
	res := map[string]any{"sessions": out}
	if r.NextCursor != "" {
		res["nextCursor"] = r.NextCursor
	}
	return res, nil
}

// closeSession stops the session's harness the way an idle suspension
// does (a checkpoint first, when there is work to keep), and stops sending
// its updates.
func (s *Server) closeSession(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" {
		return nil, badParams("sessionId is required")
	}
	r, err := s.b.SessionSuspend(ctx, schema.SessionSuspendParams{SessionID: p.SessionID})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	delete(s.sessions, p.SessionID)
	s.mu.Unlock()
	meta := map[string]any{"suspended": r.Suspended}
	if r.CheckpointEntryID != "" {
		meta["checkpointEntryId"] = r.CheckpointEntryID
	}
	return map[string]any{"_meta": map[string]any{"bridge": meta}}, nil
}

// configOptions are the session's model (and effort) choices as ACP
// session config options; nil when the harness lists no models.
func (s *Server) configOptions(ctx context.Context, id string) []any {
	m, err := s.b.SessionModels(ctx, schema.SessionModelsParams{SessionID: id})
	if err != nil || len(m.Models) == 0 {
		return nil
	}
	cur := m.Model
	var opts []any
	var efforts []string
	seen := map[string]bool{}
	for _, x := range m.Models {
		name := x.Name
		if name == "" {
			name = x.ID
		}
		opts = append(opts, map[string]any{"value": x.ID, "name": name})
		if cur == "" {
			cur = x.ID
		}
		if x.ID == cur {
			for _, e := range x.Efforts {
				if !seen[e] {
					seen[e] = true
					efforts = append(efforts, e)
				}
			}
		}
	}
	out := []any{map[string]any{"id": "model", "name": "Model", "category": "model", "type": "select",
		"currentValue": cur, "options": opts}}
	if len(efforts) > 0 {
		eopts := []any{}
		for _, e := range efforts {
			eopts = append(eopts, map[string]any{"value": e, "name": e})
		}
		eff := m.Effort
		if eff == "" {
			eff = efforts[0]
		}
		out = append(out, map[string]any{"id": "effort", "name": "Reasoning effort", "category": "thought_level",
			"type": "select", "currentValue": eff, "options": eopts})
	}
	return out
}

func (s *Server) setConfigOption(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		SessionID string          `json:"sessionId"`
		ConfigID  string          `json:"configId"`
		Value     json.RawMessage `json:"value"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	var v string
	if json.Unmarshal(p.Value, &v) != nil || v == "" {
		return nil, badParams("value must be one of the option's values")
	}
	sel := schema.SessionSelectModelParams{SessionID: p.SessionID}
	switch p.ConfigID {
	case "model":
		sel.Model = v
	case "effort":
		sel.Effort = v
	default:
		return nil, badParams("configId %q is not an option of this session (model, effort)", p.ConfigID)
	}
	if _, err := s.b.SessionSelectModel(ctx, sel); err != nil {
		return nil, err
	}
	opts := s.configOptions(ctx, p.SessionID)
	if opts == nil {
		opts = []any{}
	}
	return map[string]any{"configOptions": opts}, nil
}

// setModel is the older, unstable session/set_model some clients still
// send.
func (s *Server) setModel(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModelID   string `json:"modelId"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if p.ModelID == "" {
		return nil, badParams("modelId is required")
	}
	if _, err := s.b.SessionSelectModel(ctx, schema.SessionSelectModelParams{SessionID: p.SessionID, Model: p.ModelID}); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// send writes one session/update.
func (s *Server) send(sessionID string, u update) {
	if err := s.c.notify("session/update", map[string]any{"sessionId": sessionID, "update": u}); err != nil {
		s.log.Debug("acp: writing an update", "error", err)
	}
}

// EntryAppended implements service.Notifier: a recorded entry of a session
// this client opened becomes its session/update(s).
func (s *Server) EntryAppended(e core.Entry) {
	ss := s.opened(e.SessionID)
	if ss == nil {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, u := range ss.view.updatesFor(e, false) {
		s.send(e.SessionID, u)
	}
}

// ContextCompacted implements service.Notifier (the context.compacted entry
// itself is shown).
func (s *Server) ContextCompacted(service.ContextCompacted) {}

// CheckpointSaved implements service.Notifier; a checkpoint a client asked
// for is reported by its command.
func (s *Server) CheckpointSaved(service.CheckpointSaved) {}

// Restored implements service.Notifier: how a session came back is the
// first thing its client is told, in text and in _meta.
func (s *Server) Restored(r service.Restored) {
	if s.opened(r.SessionID) == nil {
		return
	}
	text := "[Bridge] Session restored: " + r.Mode
	if r.Reason != "" {
		text += " (" + r.Reason + ")"
	}
	u := chunk("agent_message_chunk", text+"\n")
	u["_meta"] = restoreMeta(r)
	s.send(r.SessionID, u)
}

// Gauge implements service.GaugeNotifier: a context reading of a session
// this client opened is its usage_update (the context gauge).
func (s *Server) Gauge(sessionID string, g core.Gauge) {
	if g.Size <= 0 || g.Used < 0 || s.opened(sessionID) == nil {
		return
	}
	s.send(sessionID, update{"sessionUpdate": "usage_update", "used": g.Used, "size": g.Size})
}

// Log implements service.Notifier: the service's messages go to the log.
func (s *Server) Log(level int, msg string) {
	switch level {
	case 1:
		s.log.Error(msg)
	case 2:
		s.log.Warn(msg)
	case 3:
		s.log.Info(msg)
	default:
		s.log.Debug(msg)
	}
}

// RequestPermission implements service.PermissionAsker: the harness's
// question goes to the client as session/request_permission, with ACP's
// own option kinds, and the chosen option's id comes back ("" when the
// client answered "cancelled").
func (s *Server) RequestPermission(ctx context.Context, p service.PermissionRequest) (string, error) {
	if s.opened(p.SessionID) == nil {
		return "", core.Errorf(core.CodeUnavailable, "session %s is not open in this ACP connection", p.SessionID)
	}
	r := p.Request
	tc := map[string]any{"toolCallId": r.ToolCallID, "title": r.Title, "status": "pending"}
	if r.Kind != "" {
		tc["kind"] = r.Kind
	}
	if len(r.RawInput) > 0 && json.Valid(r.RawInput) {
		tc["rawInput"] = r.RawInput
	}
	opts := make([]any, 0, len(r.Options))
	for _, o := range r.Options {
		opts = append(opts, map[string]any{"optionId": o.ID, "name": o.Name, "kind": o.Kind})
	}
	var res struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	if err := s.c.call(ctx, "session/request_permission", map[string]any{"sessionId": p.SessionID, "toolCall": tc, "options": opts}, &res); err != nil {
		return "", err
	}
	switch res.Outcome.Outcome {
	case "cancelled":
		return "", nil
	case "selected":
		if res.Outcome.OptionID == "" {
			return "", core.Errorf(core.CodeInvalid, "session/request_permission: outcome \"selected\" without an optionId")
		}
		return res.Outcome.OptionID, nil
	}
	return "", core.Errorf(core.CodeInvalid, "session/request_permission: outcome %q is not \"selected\" or \"cancelled\"", res.Outcome.Outcome)
}
