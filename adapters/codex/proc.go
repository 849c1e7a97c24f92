package codex

import (
	"context"
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

// proc is one running `codex app-server` process and its connection.
type proc struct {
	*procutil.Process
	conn *conn
	done <-chan struct{}

	mu sync.Mutex
}

// binary resolves the configured command on PATH.
func (h *Host) binary() (string, error) {
	p, err := exec.LookPath(h.cfg.Command)
	if err != nil {
		return "", core.E(core.CodeUnavailable, fmt.Sprintf("codex program %q not found", h.cfg.Command), err)
	}
	return p, nil
}

// environ is the process environment: Bridge's own, then Config.Env, then
// CODEX_HOME when configured.
func (h *Host) environ() []string {
	env := append(os.Environ(), h.cfg.Env...)
	if h.cfg.CodexHome != "" {
		env = append(env, "CODEX_HOME="+h.cfg.CodexHome)
	}
	return env
}

// launch says how startProc runs a process: background lowers its CPU
// priority (nice 10), idle puts it in the idle scheduling class too (only
// for a process that shares no database with the live one), args follow
// Config.Args.
type launch struct {
	background, idle bool
	args             []string
}

// startProc launches `codex app-server` as how says, wires hd to its stdout
// and runs the initialize handshake.
func (h *Host) startProc(ctx context.Context, hd handler, how launch) (*proc, error) {
	bin, err := h.binary()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, core.E(core.CodeCancelled, "codex: not started", errors.Join(core.ErrCancelled, err))
	}
	p := &proc{}
	p.Process, err = procutil.Start(procutil.Spec{Path: bin, Args: append(append([]string{"app-server"}, h.cfg.Args...), how.args...),
		Env: h.environ(), Stdin: true, Background: how.background, Idle: how.idle,
		Setup:  func(pp *procutil.Process) { p.conn = newConn(pp.Stdin, hd) },
		Stdout: func(r io.Reader) { p.conn.readLoop(r) }})
	if err != nil {
		return nil, core.E(core.CodeUnavailable, fmt.Sprintf("codex program %q could not start", bin), err)
	}
	p.done = p.Done()

	ictx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var res struct {
		UserAgent string `json:"userAgent"`
	}
	err = p.conn.call(ictx, "initialize", initializeParams{
		ClientInfo: clientInfo{Name: "bridge", Title: "Bridge", Version: Version},
	}, &res)
	if err == nil {
		err = p.conn.notify("initialized", nil)
	}
	if err != nil {
		p.kill()
		<-p.done
		return nil, core.E(core.CodeHarness, "codex app-server did not initialize: "+p.Exit().StderrTail, err)
	}
	return p, nil
}

func (p *proc) kill() { p.Signal(true) }

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// close ends the process: stdin is closed (app-server exits on end of
// input), then it is killed if it has not gone within the grace period.
func (p *proc) close(ctx context.Context) error {
	_ = p.Stdin.Close()
	t := time.NewTimer(3 * time.Second)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	p.kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("codex app-server did not exit after kill")
	}
}
