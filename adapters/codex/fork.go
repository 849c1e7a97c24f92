package codex

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/forkreply"
	"github.com/bridge-dev/bridge/core"
)

// fork is a discardable side copy of a live Codex thread: a side
// app-server process (at nice 10, and in the idle scheduling class with
// databases of its own when Config.StateDir is set: sidedb.go) that forks
// the thread from its rollout (thread/fork, ephemeral, so nothing is
// stored) with the live session's own options. The first fork of a session starts the side process; a fork
// whose turn ended cleanly hands it back to the live session (spare), and
// the next fork forks there, so that a checkpoint costs a thread/fork and a
// turn, not a process start (the node launcher and Codex's start-up, 0.3
// to 0.6 CPU-seconds beside the live turn, measured at load 25). The live process is not
// paused, restarted or told.
type fork struct {
	owner *live
	side  *live
	out   *sideSink      // the side process's events, forwarded to text
	text  forkreply.Text // assistant text of the running Ask
	clean bool           // the last Ask ended with its turn completed
	// spareForks counts the forks its side process has served, this one
	// included.
	spareForks int
}

// maxSpareForks bounds how many forks one side process serves: each keeps
// its (ephemeral) thread loaded in the process.
const maxSpareForks = 16

// spare is a side process kept between forks, with the forks it served.
type spare struct {
	side  *live
	out   *sideSink
	forks int
	idle  *time.Timer // stops it once kept idle for Config.SpareIdle
}

// sideSink forwards a side process's events to the fork using it now.
type sideSink struct {
	mu sync.Mutex
	to *forkreply.Text
}

func (s *sideSink) sink(ev core.Event) {
	s.mu.Lock()
	to := s.to
	s.mu.Unlock()
	if to != nil {
		to.Sink(ev)
	}
}

func (s *sideSink) set(to *forkreply.Text) {
	s.mu.Lock()
	s.to = to
	s.mu.Unlock()
}

// Fork forks the thread on the spare side process, or on a new one.
func (l *live) Fork(ctx context.Context) (core.Fork, error) {
	id := l.thread()
	if id == "" {
		return nil, core.Errorf(core.CodeUnavailable, "codex: the session has no thread to fork yet")
	}
	req := l.req
	req.Approve = forkreply.Refuse
	l.mu.Lock()
	req.Model, req.Effort = l.model, l.effort
	sp := l.spare
	l.spare = nil
	if sp != nil {
		sp.idle.Stop()
	}
	l.mu.Unlock()
	f := &fork{owner: l}
	if sp != nil && !sp.side.p.exited() {
		sp.side.reuse(req.Model, req.Effort)
		if err := f.forkOn(ctx, sp, req, id); err == nil {
			return f, nil
		}
		// Codex may refuse to fork on a process that forked the thread
		// before ("thread history projection ... is behind durable
		// rollout", while the live turn writes it, seen when the side
		// process shares CODEX_HOME's databases, without
		// Config.StateDir): a new process forks from the rollout itself.
	}
	if sp != nil {
		_ = sp.side.p.close(context.WithoutCancel(ctx))
	}
	sp = &spare{out: &sideSink{}}
	side, err := l.h.open(ctx, req, sp.out.sink, true)
	if err != nil {
		return nil, err
	}
	sp.side = side
	if err := f.forkOn(ctx, sp, req, id); err != nil {
		return nil, err
	}
	return f, nil
}

// forkOn forks thread id on sp's side process (thread/fork, ephemeral);
// on failure the process is stopped.
func (f *fork) forkOn(ctx context.Context, sp *spare, req core.CreateRequest, id string) error {
	side := sp.side
	f.side, f.out = side, sp.out
	f.out.set(&f.text)
	params := side.threadParams(req)
	params.ThreadID = id
	params.Ephemeral = true
	params.ExcludeTurns = true
	var res struct {
		Thread wireThread `json:"thread"`
	}
	if err := side.p.conn.call(ctx, "thread/fork", params, &res); err != nil {
		cerr := side.callErr("thread/fork", err)
		_ = side.p.close(context.WithoutCancel(ctx))
		return cerr
	}
	if res.Thread.ID == "" || res.Thread.ID == id {
		_ = side.p.close(context.WithoutCancel(ctx))
		return core.Errorf(core.CodeHarness, "codex thread/fork of %s returned thread %q", id, res.Thread.ID)
	}
	side.mu.Lock()
	side.threadID = res.Thread.ID
	side.mu.Unlock()
	sp.forks++
	f.spareForks = sp.forks
	return nil
}

// Ask runs one turn in the fork.
func (f *fork) Ask(ctx context.Context, prompt string) (core.ForkReply, error) {
	f.text.Reset()
	f.clean = false
	res, err := f.side.Prompt(ctx, []core.Content{{Type: "text", Text: prompt}})
	if err != nil {
		return core.ForkReply{}, err
	}
	if res.StopReason != "end_turn" {
		return core.ForkReply{}, core.Errorf(core.CodeHarness, "codex: the fork's turn ended with %s", res.StopReason)
	}
	f.clean = true
	f.side.mu.Lock()
	u := f.side.usage
	f.side.mu.Unlock()
	return core.ForkReply{Text: f.text.String(), Usage: u}, nil
}

// Close ends the fork: its side process is kept as the live session's
// spare when the fork's last turn ended cleanly, the live session is open
// and has no spare, and the process has served fewer than maxSpareForks
// forks; otherwise the process is stopped.
func (f *fork) Close(ctx context.Context) error {
	f.out.set(nil)
	if f.clean && f.spareForks < maxSpareForks && f.owner.keepSpare(&spare{side: f.side, out: f.out, forks: f.spareForks}) {
		return nil
	}
	return f.side.Close(ctx)
}

// keepSpare parks sp's side process for the next fork unless the session
// is closed, already has a spare, the process has exited, or spares are
// not kept (Config.SpareIdle < 0). A spare left idle for Config.SpareIdle
// is stopped (an idle app-server and its launcher hold memory, and a
// side database folder, for as long as they run).
func (l *live) keepSpare(sp *spare) bool {
	idle := l.h.cfg.SpareIdle
	if idle == 0 {
		idle = DefaultSpareIdle
	}
	if idle < 0 || sp.side.p.exited() {
		return false
	}
	sp.side.retire()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.spare != nil {
		return false
	}
	l.spare = sp
	sp.idle = time.AfterFunc(idle, func() { l.dropSpare(sp) })
	return true
}

// dropSpare stops sp's side process unless a fork took it meanwhile.
func (l *live) dropSpare(sp *spare) {
	l.mu.Lock()
	if l.spare != sp {
		l.mu.Unlock()
		return
	}
	l.spare = nil
	l.mu.Unlock()
	_ = sp.side.p.close(context.Background())
}

// lastUsage reads thread/tokenUsage/updated's usage of the last model call
// (Codex counts cached input tokens inside inputTokens).
func lastUsage(params json.RawMessage) *core.TokenUsage {
	var p struct {
		TokenUsage struct {
			Last struct {
				InputTokens       *int64 `json:"inputTokens"`
				CachedInputTokens int64  `json:"cachedInputTokens"`
				OutputTokens      int64  `json:"outputTokens"`
			} `json:"last"`
		} `json:"tokenUsage"`
	}
	if json.Unmarshal(params, &p) != nil || p.TokenUsage.Last.InputTokens == nil {
		return nil
	}
	last := p.TokenUsage.Last
	return &core.TokenUsage{InputTokens: *last.InputTokens - last.CachedInputTokens, CacheReadTokens: last.CachedInputTokens,
		OutputTokens: last.OutputTokens}
}
