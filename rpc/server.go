package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// state is the server's place in the LSP lifecycle.
type state int

const (
	stateCreated      state = iota // waiting for initialize
	stateInitializing              // initialize is running
	stateInitialized               // serving
	stateShutdown                  // shutdown received; waiting for exit
)

func (s state) String() string {
	switch s {
	case stateCreated:
		return "not initialized"
	case stateInitializing:
		return "initializing"
	case stateInitialized:
		return "initialized"
	case stateShutdown:
		return "shut down"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// drainWait bounds how long Serve waits, once the connection is over, for
// handlers that ignore cancellation.
const drainWait = 5 * time.Second

// server is one connection's state. Lifecycle requests (initialize,
// shutdown, exit) run inline on the read loop, in wire order; every other
// request is released to run concurrently.
type server struct {
	cfg  Config
	log  *slog.Logger
	conn jsonrpc2.Conn
	life context.Context // the connection's lifetime
	// inputEnded is closed when the client's input ends (or fails): no
	// reply to a call of ours can arrive after that.
	inputEnded <-chan struct{}

	// inflight maps the id of each running request to the cancel function
	// of its context ($/cancelRequest). jsonrpc2.CancelHandler is not used:
	// it derives a context.WithCancel from the pooled per-request context,
	// whose propagation goroutine can observe the request after the pool
	// recycled it (a nil-parent panic). Handler contexts here derive from
	// the connection's lifetime instead.
	cmu      sync.Mutex
	inflight map[jsonrpc2.ID]running
	// replies holds the requests whose reply is not written yet.
	replies *replies
	// progressing maps the token of each running work-done progress to the
	// cancel function of its request (window/workDoneProgress/cancel).
	progressing map[schema.ProgressToken]context.CancelFunc

	mu          sync.Mutex
	state       state
	backend     Backend
	initialized bool      // the initialized notification arrived
	closed      bool      // backend closed
	closeOnce   sync.Once // closes the backend once
	stopOnce    sync.Once // closes stopping once

	// drained is closed once shutdown (the request, or a signal) has let
	// the requests received before it finish and closed the backend; nil
	// until shutdown starts. Guarded by mu.
	drained chan struct{}
	// stopping is closed when the process is asked to stop (a signal):
	// shutdown then stops waiting for earlier requests.
	stopping chan struct{}

	handlers sync.WaitGroup
	exitOnce sync.Once
	exitCh   chan int
}

// running is one released request: its method and the cancel function of
// its context.
type running struct {
	method string
	cancel context.CancelFunc
}

// Serve runs the JSON-RPC server on in and out until the client sends exit,
// the input ends, or ctx ends. It returns the process exit code the LSP
// lifecycle prescribes: 0 when exit (or the end of input) follows shutdown,
// 1 otherwise. The end of ctx (the process was asked to stop: SIGTERM,
// Ctrl-C) takes the path a shutdown request takes, then ends with 0. Serve
// returns only once every reply it owes is written (each bounded by
// drainWait). err reports a transport failure; a clean exit returns nil. If
// in is an io.Closer it is closed on return.
func Serve(ctx context.Context, in io.Reader, out io.Writer, cfg Config) (exitCode int, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if cfg.Open == nil {
		return 1, fmt.Errorf("rpc: Config.Open is nil")
	}
	closer := func() error {
		if c, ok := in.(io.Closer); ok {
			return c.Close()
		}
		return nil
	}
	return serveTransport(ctx, newLSPStream(in, out, cfg.MaxContentLength, log, closer), cfg, log)
}

// transport is a jsonrpc2.Stream that reports the end of its input.
type transport interface {
	jsonrpc2.Stream
	// ended is closed when reading meets end of input or a failure.
	ended() <-chan struct{}
	// failure is the error that ended reading, nil for a clean end.
	failure() error
	// onReplied sets the function told the id of every response written.
	onReplied(func(jsonrpc2.ID))
	// onWriteFailed sets the function told the error of a failed write.
	onWriteFailed(func(error))
}

// serveTransport runs the server over one transport; see Serve.
func serveTransport(ctx context.Context, stream transport, cfg Config, log *slog.Logger) (exitCode int, err error) {
	// The connection outlives ctx: its end is a request to shut down,
	// which still needs the handlers' contexts.
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	s := &server{cfg: cfg, log: log, life: life, exitCh: make(chan int, 1), stopping: make(chan struct{}),
		inflight: make(map[jsonrpc2.ID]running), replies: newReplies(), inputEnded: stream.ended(),
		progressing: make(map[schema.ProgressToken]context.CancelFunc)}
	stream.onReplied(s.replies.done)
	stream.onWriteFailed(s.replies.writeFailed)
	s.conn = jsonrpc2.NewConn(stream, jsonrpc2.WithPreempter(s))
	s.conn.Go(life, s.handle)

	select {
	case exitCode = <-s.exitCh:
	case <-stream.ended():
		exitCode = s.exitCode()
		if serr := stream.failure(); serr != nil {
			err = fmt.Errorf("rpc: reading from the client: %w", serr)
		}
		log.Info("rpc: input ended", "exitCode", exitCode)
	case <-ctx.Done():
		log.Info("rpc: asked to stop; shutting down")
		s.stop()
		s.stopGracefully()
		exitCode = 0
	}
	// exit (or the end of input) may arrive while shutdown still lets the
	// requests before it finish: the backend closes only after them.
	s.awaitDrained(ctx)

	if s.exitCode() != 0 {
		// No shutdown came first: running requests are cancelled, so
		// that they answer now. (Not by ending life: the connection must
		// read and write until their replies are out.)
		s.cmu.Lock()
		for _, r := range s.inflight {
			r.cancel()
		}
		s.cmu.Unlock()
	}
	// After shutdown the backend is closed already.
	s.closeBackend(context.WithoutCancel(ctx))
	if !s.replies.wait(nil, true, drainWait) {
		s.logUnanswered("rpc: requests still unanswered at exit", s.replies.pending(jsonrpc2.ID{}))
	}
	stop() // cancels every handler's context
	_ = stream.Close()
	s.waitHandlers()
	return exitCode, err
}

// waitHandlers waits, boundedly, for released handlers to return.
func (s *server) waitHandlers() {
	done := make(chan struct{})
	go func() { s.handlers.Wait(); close(done) }()
	t := time.NewTimer(drainWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("rpc: handlers still running after the connection ended")
	}
}

// exitCode is 0 after shutdown and 1 before it.
func (s *server) exitCode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateShutdown {
		return 0
	}
	return 1
}

// exit records the exit code once and ends Serve.
func (s *server) exit() {
	s.exitOnce.Do(func() { s.exitCh <- s.exitCode() })
}

// Preempt handles $/cancelRequest and window/workDoneProgress/cancel on the
// read loop, ahead of the requests that follow them, so a cancellation is
// never queued behind other work.
func (s *server) Preempt(_ context.Context, req *jsonrpc2.Request) (any, error) {
	if !req.IsCall() && req.Method() == "window/workDoneProgress/cancel" {
		s.cancelProgress(json.RawMessage(req.Params()))
		return true, nil
	}
	if req.IsCall() || req.Method() != "$/cancelRequest" {
		return nil, jsonrpc2.ErrNotHandled
	}
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(req.Params(), &p); err != nil || len(p.ID) == 0 {
		s.log.Warn("rpc: $/cancelRequest without a usable id", "params", string(req.Params()))
		return true, nil
	}
	if id := wireID(p.ID); id.IsValid() {
		s.cmu.Lock()
		r, ok := s.inflight[id]
		s.cmu.Unlock()
		if ok {
			r.cancel()
		}
	}
	return true, nil
}

// cancelProgress cancels the request whose work-done progress has the
// token in params; an unknown or finished token is ignored, as LSP asks.
func (s *server) cancelProgress(params json.RawMessage) {
	var p schema.WorkDoneProgressCancelParams
	if err := json.Unmarshal(params, &p); err != nil {
		s.log.Warn("rpc: window/workDoneProgress/cancel without a usable token", "params", string(params))
		return
	}
	s.cmu.Lock()
	cancel := s.progressing[p.Token]
	s.cmu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// trackProgress makes token cancel ctx's request until untrack is called.
func (s *server) trackProgress(ctx context.Context, token schema.ProgressToken) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	s.cmu.Lock()
	s.progressing[token] = cancel
	s.cmu.Unlock()
	return ctx, func() {
		s.cmu.Lock()
		delete(s.progressing, token)
		s.cmu.Unlock()
		cancel()
	}
}

// track gives request id a cancellable context derived from the
// connection's lifetime; untrack must follow.
func (s *server) track(id jsonrpc2.ID, method string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(s.life)
	s.cmu.Lock()
	s.inflight[id] = running{method: method, cancel: cancel}
	s.cmu.Unlock()
	return ctx, func() {
		s.cmu.Lock()
		delete(s.inflight, id)
		s.cmu.Unlock()
		cancel()
	}
}

// handle is the connection's handler: the lifecycle gate, then dispatch.
func (s *server) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	method := req.Method()
	if !req.IsCall() {
		s.notification(ctx, method, json.RawMessage(req.Params()))
		return nil, nil
	}
	// On the read loop, in wire order: shutdown answers after every
	// request before it.
	s.replies.add(req.ID())
	switch method {
	case "initialize":
		return s.initialize(ctx, json.RawMessage(req.Params()))
	case "shutdown":
		return s.shutdown(ctx, req.ID())
	case "exit":
		s.exit()
		return nil, nil
	}
	b, werr := s.gate(method)
	if werr != nil {
		return nil, werr
	}
	m, ok := methodTable()[method]
	if !ok {
		return nil, jsonrpc2.Errorf(CodeMethodNotFound, "method not found: %s", core.Quote(method))
	}
	s.handlers.Add(1)
	defer s.handlers.Done()
	// Register for cancellation while still on the read loop, so a
	// $/cancelRequest that follows the request always finds it.
	rctx, untrack := s.track(req.ID(), method)
	defer untrack()
	// Release the read loop: a slow request never blocks a fast one. The
	// release copies the request's params, so they stay valid.
	jsonrpc2.Async(ctx)
	return s.run(rctx, m, b, json.RawMessage(req.Params()))
}

// gate returns the backend when ordinary requests may run, or the lifecycle
// error that refuses them.
func (s *server) gate(method string) (Backend, *jsonrpc2.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateInitialized:
		return s.backend, nil
	case stateShutdown:
		return nil, jsonrpc2.Errorf(CodeInvalidRequest, "%s: the server is shut down; only exit is accepted", method)
	default:
		return nil, jsonrpc2.Errorf(CodeNotInitialized, "%s: the server is %s; send initialize first", method, s.state)
	}
}

// notification handles client notifications; before initialize all but exit
// are dropped.
func (s *server) notification(_ context.Context, method string, params json.RawMessage) {
	if method == "exit" {
		s.exit()
		return
	}
	s.mu.Lock()
	st, b := s.state, s.backend
	if method == "initialized" && st == stateInitialized {
		s.initialized = true
	}
	s.mu.Unlock()
	if st != stateInitialized {
		s.log.Debug("rpc: notification dropped", "method", method, "state", st.String())
		return
	}
	if method == "host/event" {
		if r, ok := b.(EventReceiver); ok {
			r.HostEvent(s.life, append(json.RawMessage(nil), params...))
		}
	}
}

// shutdown closes the backend once; later calls succeed without effect.
// The state changes on the read loop (so requests after it are refused),
// then the read loop is released: closing the backend may call the client
// back (host/session.close), whose reply the read loop must be free to read.
// Its reply follows the replies to every request received before it.
func (s *server) shutdown(ctx context.Context, self jsonrpc2.ID) (any, error) {
	s.mu.Lock()
	switch s.state {
	case stateCreated, stateInitializing:
		st := s.state
		s.mu.Unlock()
		return nil, jsonrpc2.Errorf(CodeNotInitialized, "shutdown: the server is %s", st)
	case stateShutdown:
		s.mu.Unlock()
		return nil, nil
	}
	s.state = stateShutdown
	s.drained = make(chan struct{})
	s.mu.Unlock()
	earlier := s.replies.pending(self)
	jsonrpc2.Async(ctx)
	s.drainAndClose(earlier, s.stopping)
	return nil, nil
}

// awaitDrained waits until a shutdown under way has closed the backend
// (at once when none started). A signal (ctx) cuts shutdown's wait for the
// earlier requests short, not this wait for the close.
func (s *server) awaitDrained(ctx context.Context) {
	s.mu.Lock()
	ch := s.drained
	s.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
		return
	case <-ctx.Done():
	}
	s.stop()
	<-ch
}

// stopGracefully is shutdown without a request: the process was asked to
// stop (a signal). It does what shutdown does.
func (s *server) stopGracefully() {
	s.mu.Lock()
	shut := s.state == stateInitialized
	if shut {
		s.state = stateShutdown
		s.drained = make(chan struct{})
	}
	s.mu.Unlock()
	if shut {
		s.drainAndClose(s.replies.pending(jsonrpc2.ID{}), expired(drainWait))
	}
}

// stop tells a shutdown under way to stop waiting for earlier requests.
func (s *server) stop() { s.stopOnce.Do(func() { close(s.stopping) }) }

// expired returns a channel closed after d.
func expired(d time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	time.AfterFunc(d, func() { close(ch) })
	return ch
}

// closedNotAwaited are the requests shutdown does not wait for before it
// closes the backend: a turn of the agent has no natural end the client
// could wait for; closing the backend ends it, and it is answered then.
var closedNotAwaited = map[string]bool{"session/prompt": true}

// drainAndClose lets the earlier requests finish and answer with their
// results (every one, however long it takes, until giveUp is closed),
// closes the backend (which ends running prompts), waits for the earlier
// replies still owed, and closes s.drained.
func (s *server) drainAndClose(earlier []jsonrpc2.ID, giveUp <-chan struct{}) {
	s.mu.Lock()
	drained := s.drained
	s.mu.Unlock()
	defer close(drained)
	var first []jsonrpc2.ID
	s.cmu.Lock()
	for _, id := range earlier {
		if r, ok := s.inflight[id]; !ok || !closedNotAwaited[r.method] {
			first = append(first, id)
		}
	}
	s.cmu.Unlock()
	if !s.replies.waitUntil(first, giveUp) && s.replies.writeFailure() == nil {
		s.log.Warn("rpc: shutdown: earlier requests still running; closing anyway")
	}
	// Not the request's context: it is pooled and must not be retained.
	s.closeBackend(context.WithoutCancel(s.life))
	if !s.replies.wait(earlier, false, drainWait) {
		s.logUnanswered("rpc: shutdown: earlier requests still unanswered after the close", earlier)
	}
}

// logUnanswered reports requests left without a reply: a warning (what)
// while the connection works; once a write to the client has failed (the
// transport has said so once already: a tab that fell behind, a closed
// stdout), no reply can be written, and that is what is said, at info level.
func (s *server) logUnanswered(what string, ids []jsonrpc2.ID) {
	err := s.replies.writeFailure()
	if err == nil {
		s.log.Warn(what)
		return
	}
	var still int
	for _, id := range ids {
		if s.replies.isOpen(id) {
			still++
		}
	}
	s.log.Info("rpc: requests left unanswered: writing to the client failed", "requests", still, "error", err)
}

// closeBackend closes the backend once; a second caller waits for the
// first to finish (so exit never ends the process mid-close).
func (s *server) closeBackend(ctx context.Context) {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		b := s.backend
		s.closed = true
		s.mu.Unlock()
		if b == nil {
			return
		}
		if err := b.Close(ctx); err != nil {
			s.log.Error("rpc: closing the backend", "error", err)
		}
	})
}
