package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
	"github.com/bridge-dev/bridge/core"
)

// agent is one running agent process and its connection.
type agent struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	conn   *conn
	stderr *procutil.Tail
	done   chan struct{}

	mu   sync.Mutex
	exit core.ExitInfo

	init initializeResult
}

// resolveProgram finds the agent program, or says clearly that it is missing.
func (h *Host) resolveProgram() (string, error) {
	if h.cfg.Command == "" {
		return "", core.Errorf(core.CodeUnavailable, "acp harness %q: no agent program configured", h.cfg.Name)
	}
	p, err := exec.LookPath(h.cfg.Command)
	if err != nil {
		return "", core.E(core.CodeUnavailable, fmt.Sprintf("acp harness %q: agent program %q not found", h.cfg.Name, h.cfg.Command), err)
	}
	return p, nil
}

// spawn starts the agent in cwd with handler receiving what it sends, and
// runs initialize. The process outlives ctx; ctx bounds only the start.
func (h *Host) spawn(ctx context.Context, cwd string, handler connHandler) (*agent, error) {
	if err := ctx.Err(); err != nil {
		return nil, core.E(core.CodeCancelled, "acp: start agent", err)
	}
	prog, err := h.resolveProgram()
	if err != nil {
		return nil, err
	}
	if cwd == "" {
		cwd = h.cfg.Cwd
	}
	cmd := exec.Command(prog, h.cfg.Args...)
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), h.cfg.Env...)
	procutil.SetProcessGroup(cmd)
	cmd.WaitDelay = 3 * time.Second
	a := &agent{cmd: cmd, stderr: &procutil.Tail{}, done: make(chan struct{})}
	cmd.Stderr = a.stderr
	a.stdin, err = cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("acp: stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("acp: stdout pipe: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, core.E(core.CodeUnavailable, fmt.Sprintf("acp harness %q: start %s", h.cfg.Name, prog), err)
	}
	a.conn = newConn(a.stdin, handler)
	served := make(chan struct{})
	go func() {
		a.conn.serve(stdout)
		close(served)
	}()
	go func() {
		werr := cmd.Wait()
		<-served
		procutil.SignalGroup(cmd, true) // children the agent left behind
		a.mu.Lock()
		a.exit = core.ExitInfo{Code: cmd.ProcessState.ExitCode(), StderrTail: a.stderr.String()}
		var ee *exec.ExitError
		if werr != nil && !errors.As(werr, &ee) {
			a.exit.Err = werr.Error()
		}
		a.mu.Unlock()
		close(a.done)
	}()
	if err := a.initialize(ctx, h.cfg.Name); err != nil {
		a.stop(context.Background())
		return nil, err
	}
	h.learnInit(a.init)
	return a, nil
}

// ClientVersion is the version Bridge reports as clientInfo in initialize
// (some agents require one); cmd/bridge may set it to its own version.
var ClientVersion = "0.1.0"

// initialize negotiates the protocol. Bridge offers no file system and no
// terminal (the agent uses its own tools), and advertises the unstable
// session compaction capability so that compaction_update reaches it.
func (a *agent) initialize(ctx context.Context, name string) error {
	params := initializeParams{
		ProtocolVersion: protocolVersion,
		ClientCapabilities: clientCapabilities{
			Session: clientSessionCapabils{Compaction: &struct{}{}},
		},
		ClientInfo: &implementation{Name: "bridge", Title: "Bridge", Version: ClientVersion},
	}
	res, err := a.call(ctx, "initialize", params)
	if err != nil {
		return fmt.Errorf("acp harness %q: initialize: %w", name, err)
	}
	if err := json.Unmarshal(res, &a.init); err != nil {
		return core.E(core.CodeHarness, fmt.Sprintf("acp harness %q: initialize result is not an InitializeResponse", name), err)
	}
	return nil
}

// call makes a request, turning a dead agent into a harness error that
// carries its stderr.
func (a *agent) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	res, err := a.conn.call(ctx, method, params)
	if err == nil {
		return res, nil
	}
	var re *rpcError
	switch {
	case errors.As(err, &re):
		return nil, core.E(core.CodeHarness, "agent refused "+method, err)
	case ctx.Err() != nil:
		return nil, core.E(core.CodeCancelled, method+" abandoned", err)
	default:
		return nil, core.E(core.CodeHarness, method+": agent process ended"+a.tailNote(), err)
	}
}

// tailNote returns the agent's recent stderr for an error message.
func (a *agent) tailNote() string {
	select {
	case <-a.done:
	case <-time.After(500 * time.Millisecond):
	}
	if s := a.stderr.String(); s != "" {
		return " (stderr: " + s + ")"
	}
	return ""
}

// exitInfo returns how the process ended (valid once done is closed).
func (a *agent) exitInfo() core.ExitInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.exit
}

// stop ends the process: closing stdin asks it to go, then SIGTERM, then
// SIGKILL to its process group. It waits for the process unless ctx ends.
func (a *agent) stop(ctx context.Context) {
	_ = a.stdin.Close()
	steps := []struct {
		do   func()
		wait time.Duration
	}{
		{func() {}, time.Second},
		{func() { procutil.SignalGroup(a.cmd, false) }, 2 * time.Second},
		{func() { procutil.SignalGroup(a.cmd, true) }, 2 * time.Second},
	}
	for _, st := range steps {
		st.do()
		select {
		case <-a.done:
			return
		case <-ctx.Done():
			procutil.SignalGroup(a.cmd, true)
			return
		case <-time.After(st.wait):
		}
	}
	select {
	case <-a.done:
	case <-ctx.Done():
	}
}
