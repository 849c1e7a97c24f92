package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
	"github.com/bridge-dev/bridge/core"
)

// server is one running `opencode serve` (or, in tests, any base URL that
// speaks its HTTP API).
type server struct {
	base   string
	proc   *procutil.Process
	stderr *procutil.Tail
	done   <-chan struct{} // closed when the process has exited
	exit   core.ExitInfo   // valid after done
	ctx    context.Context
	cancel context.CancelFunc // stops the event stream and in-flight calls
}

// dead reports whether the server process has exited.
func (s *server) dead() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// exitError describes the exited server for callers that were waiting on it.
func (s *server) exitError() error {
	x := s.exit
	msg := fmt.Sprintf("opencode server exited (code %d)", x.Code)
	if x.Err != "" {
		msg += ": " + x.Err
	}
	if t := strings.TrimSpace(x.StderrTail); t != "" {
		msg += "; stderr: " + t
	}
	return core.Errorf(core.CodeHarness, "%s", msg)
}

// environ builds the server's environment: Bridge's own, then the isolated
// home directories, then the provider configuration, then Config.Env.
func (c Config) environ() ([]string, error) {
	env := os.Environ()
	if c.Home != "" {
		dirs := map[string]string{
			"HOME":            c.Home,
			"XDG_DATA_HOME":   filepath.Join(c.Home, ".local", "share"),
			"XDG_CONFIG_HOME": filepath.Join(c.Home, ".config"),
			"XDG_CACHE_HOME":  filepath.Join(c.Home, ".cache"),
			"XDG_STATE_HOME":  filepath.Join(c.Home, ".local", "state"),
		}
		for _, k := range []string{"HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"} {
			if err := os.MkdirAll(dirs[k], 0o755); err != nil {
				return nil, fmt.Errorf("opencode: home directory: %w", err)
			}
			env = append(env, k+"="+dirs[k])
		}
	}
	if cfg := strings.TrimSpace(c.ConfigJSON); cfg != "" {
		if strings.HasPrefix(cfg, "{") {
			env = append(env, "OPENCODE_CONFIG_CONTENT="+cfg)
		} else {
			env = append(env, "OPENCODE_CONFIG="+cfg)
		}
	}
	return append(env, c.Env...), nil
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// pickPort chooses the port for a new server; a variable for tests.
var pickPort = freePort

// startAttempts bounds the tries startServer makes when the port it picked
// was taken before the server could bind it (another program may bind a
// port between freePort's close and the server's listen).
const startAttempts = 3

// startServer starts `opencode serve` on a free loopback port and waits
// until it answers, trying another port when the server could not listen on
// the one picked, for up to timeout each. The process outlives ctx; only
// the wait honours it. extraEnv is added to the configured environment.
func (h *Host) startServer(ctx context.Context, timeout time.Duration, extraEnv ...string) (*server, error) {
	for attempt := 1; ; attempt++ {
		s, err := h.startServerOnce(ctx, timeout, extraEnv)
		if err == nil {
			return s, nil
		}
		if attempt == startAttempts || !s.bindFailed() {
			return nil, err
		}
	}
}

// bindFailed reports whether a server that failed to start exited because
// it could not listen ("ServeError" is what opencode prints then).
func (s *server) bindFailed() bool {
	if s == nil || s.done == nil {
		return false
	}
	select {
	case <-s.done:
	default:
		return false
	}
	tail := s.exit.StderrTail
	return strings.Contains(tail, "ServeError") || strings.Contains(tail, "EADDRINUSE") ||
		strings.Contains(tail, "address already in use")
}

// startServerOnce is one attempt of startServer. On failure it returns the
// stopped server too (nil when no process started), for bindFailed.
func (h *Host) startServerOnce(ctx context.Context, timeout time.Duration, extraEnv []string) (*server, error) {
	bin, err := h.binary()
	if err != nil {
		return nil, err
	}
	env, err := h.cfg.environ()
	if err != nil {
		return nil, err
	}
	env = append(env, extraEnv...)
	port, err := pickPort()
	if err != nil {
		return nil, core.E(core.CodeUnavailable, "opencode: no free loopback port", err)
	}
	args := append([]string{"serve", "--hostname", "127.0.0.1", "--port", strconv.Itoa(port)}, h.cfg.Args...)
	sctx, cancel := context.WithCancel(context.Background())
	s := &server{base: "http://127.0.0.1:" + strconv.Itoa(port), ctx: sctx, cancel: cancel}
	s.proc, err = procutil.Start(procutil.Spec{Path: bin, Args: args, Dir: h.cfg.Home, Env: env,
		Exited: func(x core.ExitInfo) {
			s.exit = x
			cancel()
		}})
	if err != nil {
		cancel()
		return nil, core.E(core.CodeUnavailable, fmt.Sprintf("opencode: cannot start %q", bin), err)
	}
	s.stderr, s.done = s.proc.Stderr, s.proc.Done()
	if err := h.waitReady(ctx, s, timeout); err != nil {
		s.kill(context.Background())
		return s, err
	}
	return s, nil
}

// waitReady polls GET /global/health with a short per-request timeout: the
// server accepts connections seconds before it answers, and a request sent
// too early can hang.
func (h *Host) waitReady(ctx context.Context, s *server, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := h.do(rctx, s, http.MethodGet, "/global/health", nil, nil, nil)
		cancel()
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-s.done:
			return s.exitError()
		case <-ctx.Done():
			return core.E(core.CodeCancelled, "opencode: waiting for the server to answer", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return core.E(core.CodeTimeout, fmt.Sprintf("opencode: server did not answer within %s; stderr: %s",
				timeout, strings.TrimSpace(s.stderr.String())), last)
		}
	}
}

// kill stops the server: SIGTERM to its process group, then SIGKILL if it
// has not exited when ctx ends or after five seconds.
func (s *server) kill(ctx context.Context) {
	s.cancel()
	if s.proc == nil {
		return
	}
	s.proc.Signal(false)
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-s.done:
		return
	case <-ctx.Done():
	case <-t.C:
	}
	s.proc.Signal(true)
	<-s.done
}

// httpError is a non-2xx answer from the server, with its error envelope
// when the body held one.
type httpError struct {
	Method, Path string
	Status       int
	Body         string
	API          *apiError
}

func (e *httpError) Error() string {
	text := strings.TrimSpace(e.Body)
	if e.API != nil {
		text = e.API.String()
	}
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.Status, text)
}

// serverText is the server's own error message.
func (e *httpError) serverText() string {
	if e.API != nil && e.API.Data.Message != "" {
		return e.API.Data.Message
	}
	return strings.TrimSpace(e.Body)
}

// do sends one request to the server. path may carry a query; in is
// marshalled as JSON when non-nil; out is decoded when non-nil.
func (h *Host) do(ctx context.Context, s *server, method, path string, query url.Values, in, out any) error {
	u := s.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("opencode: encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("opencode: %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("opencode: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("opencode: %s %s: read body: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		he := &httpError{Method: method, Path: path, Status: resp.StatusCode, Body: string(data)}
		var ae apiError
		if json.Unmarshal(data, &ae) == nil && (ae.Name != "" || ae.Data.Message != "") {
			he.API = &ae
		}
		return he
	}
	if out != nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("opencode: %s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// domainError turns a failed call into a core error carrying the server's
// own text: 404 is not_found, 400 invalid, a dead server harness, a call
// cut short by its context cancelled, anything else harness.
func domainError(s *server, op string, err error) error {
	var he *httpError
	if errors.As(err, &he) {
		code := core.CodeHarness
		switch {
		case he.Status == http.StatusNotFound:
			code = core.CodeNotFound
		case he.Status == http.StatusBadRequest:
			code = core.CodeInvalid
		}
		return core.E(code, "opencode: "+op+": "+he.serverText(), err)
	}
	if s != nil && s.dead() {
		return core.E(core.CodeHarness, "opencode: "+op, s.exitError())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return core.E(core.CodeTimeout, "opencode: "+op, err)
	}
	if errors.Is(err, context.Canceled) {
		return core.E(core.CodeCancelled, "opencode: "+op, errors.Join(core.ErrCancelled, err))
	}
	return core.E(core.CodeHarness, "opencode: "+op, err)
}
