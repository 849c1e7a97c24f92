package procutil

import (
	"context"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// Spec says how to run a harness program.
type Spec struct {
	// Path is the resolved program; Args its arguments (without the
	// program itself); Dir its working directory ("" for Bridge's); Env
	// its whole environment (nil for Bridge's).
	Path string
	Args []string
	Dir  string
	Env  []string
	// Stdin pipes the program's standard input (Process.Stdin).
	Stdin bool
	// Setup, when set, runs once the pipes exist and before the program
	// starts (to build the connection that writes to Process.Stdin and that
	// Stdout feeds).
	Setup func(p *Process)
	// Stdout, when set, reads the program's standard output on its own
	// goroutine (otherwise the output is discarded); the program is waited
	// for once it returns.
	Stdout func(r io.Reader)
	// Exited, when set, runs once the program has exited, with how, before
	// Done is closed.
	Exited func(core.ExitInfo)
	// WaitDelay bounds the wait for the output pipes after the program
	// exited (children holding them open); 0 means 3 seconds.
	WaitDelay time.Duration
	// Background runs the program at a lower CPU priority (nice 10, where
	// the system has one): a side process, such as a checkpoint's fork,
	// that must not slow the live session down.
	Background bool
	// Idle runs a Background program in the idle scheduling class too
	// (IdlePriority): for a side process that shares no lock with the live
	// session.
	Idle bool
}

// Process is a running harness program in its own process group, with the
// tail of its standard error kept. It is the one way the adapters start a
// harness program.
type Process struct {
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser
	Stderr *Tail

	done chan struct{}
	mu   sync.Mutex
	exit core.ExitInfo
}

// Start runs spec. When the program has exited (and Spec.Stdout returned),
// what is left of its process group is killed (children it left behind),
// the exit is recorded, Spec.Exited runs and Done is closed.
func Start(spec Spec) (*Process, error) {
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir, cmd.Env = spec.Dir, spec.Env
	SetProcessGroup(cmd)
	cmd.WaitDelay = spec.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 3 * time.Second
	}
	p := &Process{Cmd: cmd, Stderr: &Tail{}, done: make(chan struct{})}
	cmd.Stderr = p.Stderr
	var err error
	if spec.Stdin {
		if p.Stdin, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
	}
	var stdout io.ReadCloser
	if spec.Stdout != nil {
		if stdout, err = cmd.StdoutPipe(); err != nil {
			return nil, err
		}
	}
	if spec.Setup != nil {
		spec.Setup(p)
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	switch {
	case spec.Background && spec.Idle:
		_ = IdlePriority(cmd)
	case spec.Background:
		LowerPriority(cmd)
	}
	go func() {
		if spec.Stdout != nil {
			spec.Stdout(stdout)
		}
		werr := cmd.Wait()
		SignalGroup(cmd, true)
		info := core.ExitInfo{Code: -1, StderrTail: p.Stderr.String()}
		if cmd.ProcessState != nil {
			info.Code = cmd.ProcessState.ExitCode()
		}
		if werr != nil {
			info.Err = werr.Error()
		}
		p.mu.Lock()
		p.exit = info
		p.mu.Unlock()
		if spec.Exited != nil {
			spec.Exited(info)
		}
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the program has exited and its exit is recorded.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit tells how the program ended (valid once Done is closed).
func (p *Process) Exit() core.ExitInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

// Signal asks the program's group to terminate, or kills it when hard.
func (p *Process) Signal(hard bool) { SignalGroup(p.Cmd, hard) }

// Stop ends the program: its standard input is closed (most harnesses exit
// at the end of input), then after grace its group gets SIGTERM, then after
// grace again SIGKILL. It returns once the program is gone, or when ctx
// ends (after a SIGKILL).
func (p *Process) Stop(ctx context.Context, grace time.Duration) {
	if p.Stdin != nil {
		_ = p.Stdin.Close()
	}
	for _, step := range []func(){func() {}, func() { p.Signal(false) }, func() { p.Signal(true) }} {
		step()
		t := time.NewTimer(grace)
		select {
		case <-p.done:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			p.Signal(true)
			return
		case <-t.C:
		}
	}
	select {
	case <-p.done:
	case <-ctx.Done():
	}
}
