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

	// inflight maps the id of each running request to the cancel function
	// of its context ($/cancelRequest). jsonrpc2.CancelHandler is not used:
	// it derives a context.WithCancel from the pooled per-request context,
	// whose propagation goroutine can observe the request after the pool
	// recycled it (a nil-parent panic). Handler contexts here derive from
	// the connection's lifetime instead.
	cmu      sync.Mutex
	inflight map[jsonrpc2.ID]context.CancelFunc

	mu          sync.Mutex
	state       state
	backend     Backend
	initialized bool      // the initialized notification arrived
	closed      bool      // backend closed
	closeOnce   sync.Once // closes the backend once

	handlers sync.WaitGroup
	exitOnce sync.Once
	exitCh   chan int
}

// Serve runs the JSON-RPC server on in and out until the client sends exit,
// the input ends, or ctx ends. It returns the process exit code the LSP
// lifecycle prescribes: 0 when exit (or the end of input, or the end of
// ctx) follows shutdown, 1 otherwise. err reports a transport failure or ctx's error; a clean exit
// returns nil. If in is an io.Closer it is closed on return.
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
	return serve(ctx, newLSPStream(in, out, cfg.MaxContentLength, log, closer), cfg, log)
}

// transport is a jsonrpc2.Stream that reports the end of its input.
type transport interface {
	jsonrpc2.Stream
	// ended is closed when reading meets end of input or a failure.
	ended() <-chan struct{}
	// failure is the error that ended reading, nil for a clean end.
	failure() error
}

// serve runs the server over one transport; see Serve.
func serve(ctx context.Context, stream transport, cfg Config, log *slog.Logger) (exitCode int, err error) {
	life, stop := context.WithCancel(ctx)
	defer stop()
	s := &server{cfg: cfg, log: log, life: life, exitCh: make(chan int, 1),
		inflight: make(map[jsonrpc2.ID]context.CancelFunc)}
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
		exitCode, err = s.exitCode(), ctx.Err()
	}

	stop() // cancels every handler's context
	s.closeBackend(context.WithoutCancel(ctx))
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

// Preempt handles $/cancelRequest on the read loop, ahead of the requests
// that follow it, so a cancellation is never queued behind other work.
func (s *server) Preempt(_ context.Context, req *jsonrpc2.Request) (any, error) {
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
		cancel := s.inflight[id]
		s.cmu.Unlock()
		if cancel != nil {
			cancel()
		}
	}
	return true, nil
}

// track gives request id a cancellable context derived from the
// connection's lifetime; untrack must follow.
func (s *server) track(id jsonrpc2.ID) (context.Context, func()) {
	ctx, cancel := context.WithCancel(s.life)
	s.cmu.Lock()
	s.inflight[id] = cancel
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
	switch method {
	case "initialize":
		return s.initialize(ctx, json.RawMessage(req.Params()))
	case "shutdown":
		return s.shutdown(ctx)
	case "exit":
		s.exit()
		return nil, nil
	}
	b, werr := s.gate(method)
	if werr != nil {
		return nil, werr
	}
	m, ok := methodTable[method]
	if !ok {
		return nil, jsonrpc2.Errorf(CodeMethodNotFound, "method not found: %q", method)
	}
	s.handlers.Add(1)
	defer s.handlers.Done()
	// Register for cancellation while still on the read loop, so a
	// $/cancelRequest that follows the request always finds it.
	rctx, untrack := s.track(req.ID())
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
func (s *server) shutdown(ctx context.Context) (any, error) {
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
	s.mu.Unlock()
	jsonrpc2.Async(ctx)
	// Not the request's context: it is pooled and must not be retained.
	s.closeBackend(context.WithoutCancel(s.life))
	return nil, nil
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
