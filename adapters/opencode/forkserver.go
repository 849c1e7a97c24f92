package opencode

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
)

// forkServer is the Host's second `opencode serve`, with the same
// configuration and data folder but a database of its own in memory
// (replica.go: two processes writing one database made the live server's
// turns wait on the fork's writes), on which checkpoint forks are copied
// from a replica of the live session and asked. It is started in the
// background by the first fork of a session on a server Bridge started (a
// Host that never forks never pays for it), and again by the next fork
// after it died or failed to start. It starts at
// Bridge's priority and runs at nice 10 and in the idle scheduling class
// (procutil.IdlePriority) once it answers, so that a fork's turn does not
// take CPU from the live server: an
// OpenCode start costs about 8 CPU-seconds (OpenCode 1.18, with a fresh
// HOME or not), and at nice 10 on a busy machine it did not finish in
// seven minutes. Until it answers, forks are made on the live server, as
// they are for a preset that turns the fork server off: the copy is the
// same, only its CPU is shared.
type forkServer struct {
	srv      *server         // the fork server, once it answers
	warming  bool            // a start is under way
	lastErr  error           // why the last start failed
	idleErr  error           // the system's refusal of the idle class, if any
	ctx      context.Context // ends with the Host: stops a start under way
	stop     context.CancelFunc
	starting sync.WaitGroup // the start under way, which Close waits for
}

// forkServerStartTimeout bounds the fork server's start: on a busy
// machine it can take minutes, and forks are made on the live server
// meanwhile.
const forkServerStartTimeout = 10 * time.Minute

// warmForkServer starts the fork server in the background unless it runs,
// is starting, or the live server is not one Bridge started (a server
// attached in tests has no fork server).
func (h *Host) warmForkServer() {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := &h.fork
	if h.closed || f.warming || (f.srv != nil && !f.srv.dead()) || h.srv == nil || h.srv.proc == nil {
		return
	}
	f.warming = true
	f.starting.Add(1)
	go func() {
		defer f.starting.Done()
		s, err := h.startServer(f.ctx, max(h.cfg.StartTimeout, forkServerStartTimeout), forkEnv...)
		if err == nil {
			// Idle class as well as nice 10 (where the system has it): it
			// shares no lock with the live server (its database is its
			// own), so it can take only CPU time the live side leaves.
			idleErr := procutil.IdlePriority(s.proc.Cmd)
			h.mu.Lock()
			f.idleErr = idleErr
			h.mu.Unlock()
			if err = h.follow(f.ctx, s); err != nil {
				s.kill(context.Background())
			}
		}
		h.mu.Lock()
		f.warming = false
		if err != nil {
			f.lastErr = fmt.Errorf("opencode: start the fork server: %w", err)
			h.mu.Unlock()
			return
		}
		if h.closed {
			h.mu.Unlock()
			s.kill(context.Background())
			return
		}
		f.srv, f.lastErr = s, nil
		h.mu.Unlock()
	}()
}

// forkServerFor returns the server a fork of a session on live should be
// made on: the fork server when it answers, else live itself (and then the
// fork server is started, if it is not starting already).
func (h *Host) forkServerFor(live *server) *server {
	if live.proc == nil {
		return live
	}
	h.mu.Lock()
	f := h.fork.srv
	h.mu.Unlock()
	if f != nil && !f.dead() {
		return f
	}
	h.warmForkServer()
	return live
}
