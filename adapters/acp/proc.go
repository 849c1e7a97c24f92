package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
	"github.com/bridge-dev/bridge/core"
)

// agent is one running agent process and its connection.
type agent struct {
	*procutil.Process
	conn *conn
	done <-chan struct{}

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
// runs initialize; a background agent (a fork's side process) runs at a
// lower CPU priority (nice 10), so that on a busy machine it yields the CPU
// to the live session's agent. The process outlives ctx; ctx bounds only
// the start.
func (h *Host) spawn(ctx context.Context, cwd string, handler connHandler, background bool) (*agent, error) {
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
	a := &agent{}
	a.Process, err = procutil.Start(procutil.Spec{Path: prog, Args: h.cfg.Args, Dir: cwd, Env: append(os.Environ(), h.cfg.Env...),
		Stdin: true, Background: background,
		Setup:  func(p *procutil.Process) { a.conn = newConn(p.Stdin, handler) },
		Stdout: func(r io.Reader) { a.conn.serve(r) }})
	if err != nil {
		return nil, core.E(core.CodeUnavailable, fmt.Sprintf("acp harness %q: start %s", h.cfg.Name, prog), err)
	}
	a.done = a.Done()
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
	if s := a.Stderr.String(); s != "" {
		return " (stderr: " + s + ")"
	}
	return ""
}

// exitInfo returns how the process ended (valid once done is closed).
func (a *agent) exitInfo() core.ExitInfo { return a.Exit() }

// stop ends the process: closing stdin asks it to go, then SIGTERM, then
// SIGKILL to its process group. It waits for the process unless ctx ends.
func (a *agent) stop(ctx context.Context) { a.Stop(ctx, 2*time.Second) }
