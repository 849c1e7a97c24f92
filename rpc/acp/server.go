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
	"sync"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc"
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
	// gauge is the last context reading sent (usage.go).
	gauge     core.Gauge
	haveGauge bool
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
	sessionCaps := sessionCapabilities{}
	if compaction {
		// Unstable ACP: a client that takes compaction reports is told of
		// each compaction the harness makes.
		sessionCaps.Compaction = &struct{}{}
	}
	title := "Bridge"
	if s.opts.Harness != "" {
		title += " (" + s.opts.Harness + ")"
	}
	// A version the client proposes that Bridge does not speak is
	// answered with the one it does; the client decides.
	return initializeResult{
		ProtocolVersion: ProtocolVersion,
		AgentCapabilities: agentCapabilities{
			LoadSession: true,
			// Every harness Bridge drives takes images in a prompt; embedded
			// resources are given to the harness as text.
			PromptCapabilities:  promptCapabilities{Image: true, EmbeddedContext: true},
			SessionCapabilities: sessionCaps,
		},
		AgentInfo:   agentInfo{Name: "bridge", Title: title, Version: s.opts.Version},
		AuthMethods: []any{},
		Meta:        inBridge(harnessMeta{Harness: s.opts.Harness}),
	}, nil
}

// initializeResult answers initialize.
type initializeResult struct {
	ProtocolVersion   int                     `json:"protocolVersion"`
	AgentCapabilities agentCapabilities       `json:"agentCapabilities"`
	AgentInfo         agentInfo               `json:"agentInfo"`
	AuthMethods       []any                   `json:"authMethods"`
	Meta              bridgeMeta[harnessMeta] `json:"_meta"`
}

type agentCapabilities struct {
	LoadSession         bool                `json:"loadSession"`
	PromptCapabilities  promptCapabilities  `json:"promptCapabilities"`
	MCPCapabilities     mcpCapabilities     `json:"mcpCapabilities"`
	SessionCapabilities sessionCapabilities `json:"sessionCapabilities"`
}

type promptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

type mcpCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

// sessionCapabilities are the session methods Bridge serves, each an
// empty object; compaction only for a client that takes its reports.
type sessionCapabilities struct {
	List       struct{}  `json:"list"`
	Resume     struct{}  `json:"resume"`
	Close      struct{}  `json:"close"`
	Fork       struct{}  `json:"fork"`
	Compaction *struct{} `json:"compaction,omitempty"`
}

type agentInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Version string `json:"version"`
}

type harnessMeta struct {
	Harness string `json:"harness"`
}
