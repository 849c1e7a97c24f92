package dsh

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"

	"github.com/bridge-dev/bridge/adapters/internal/forkreply"
	"github.com/bridge-dev/bridge/core"
)

var _ core.Forker = (*live)(nil)

// fork is a discardable side copy of a live DSH session: a child session
// that DSH's own session.fork seeds with the live session's events through
// its last completed turn. The live session is not paused or told. DSH has
// no session delete, so Close archives the child (workspace.archiveSession).
type fork struct {
	side *live
	text forkreply.Text // assistant text of the running Ask

	mu    sync.Mutex
	usage *core.TokenUsage // the running Ask's, summed over its requests

	// closed, when set, runs once the fork is closed (a fork server's
	// idle clock starts again).
	closed func()
}

// sink collects the fork's assistant text and the usage its messages carry.
func (f *fork) sink(ev core.Event) {
	f.text.Sink(ev)
	if ev.Entry == nil || ev.Entry.Kind != core.KindAssistantMessage {
		return
	}
	var p struct {
		Usage *struct {
			InputTokens      int64 `json:"inputTokens"`
			OutputTokens     int64 `json:"outputTokens"`
			CacheReadTokens  int64 `json:"cacheReadTokens"`
			CacheWriteTokens int64 `json:"cacheWriteTokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(ev.Entry.Payload, &p) != nil || p.Usage == nil {
		return
	}
	u := &core.TokenUsage{InputTokens: p.Usage.InputTokens, OutputTokens: p.Usage.OutputTokens,
		CacheReadTokens: p.Usage.CacheReadTokens, CacheCreationTokens: p.Usage.CacheWriteTokens}
	f.mu.Lock()
	f.usage = f.usage.Add(u)
	f.mu.Unlock()
}

// Fork makes a child of the live session and follows it from its seed's
// end: the seed is the conversation so far, not the fork's turn, so none
// of it reaches the fork's reply. With a fork server that answers, the
// child is made there from a copy of the session's log (forkOnServer);
// otherwise, or when that fails (the reason is kept for doctor), DSH's
// own server makes it (session.fork).
func (l *live) Fork(ctx context.Context) (core.Fork, error) {
	if err := l.ensureOpen("session.fork"); err != nil {
		return nil, err
	}
	if fp := l.h.readyForkServer(ctx); fp != nil {
		f, err := l.forkOnServer(ctx, fp)
		if err == nil {
			return f, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		l.h.forks.failed(err)
	}
	return forkOn(ctx, l.h, l.id, -1)
}

// forkOnServer copies the live session's log into the fork server's home
// until it holds the turn the live session last completed, then forks the
// copy there at that turn.
func (l *live) forkOnServer(ctx context.Context, fp *forkProc) (core.Fork, error) {
	c, err := l.logCopyOn(fp)
	if err != nil {
		return nil, err
	}
	want := l.ended.Load()
	if _, err := c.through(ctx, want); err != nil {
		return nil, err
	}
	l.h.forks.begin()
	end := func() {
		if l.h.forks.end(l.h.cfg.ForkServer.IdleStop) {
			l.h.forkServer()
		}
	}
	f, err := forkOn(ctx, fp.host, l.id, want)
	if err != nil {
		end()
		return nil, err
	}
	f.closed = end
	return f, nil
}

// logCopyOn returns the session's log copy on the fork server fp (a new
// one for a fork server started since the last fork).
func (l *live) logCopyOn(fp *forkProc) (*logCopy, error) {
	l.copyMu.Lock()
	defer l.copyMu.Unlock()
	if l.copy != nil && l.copyHome == fp.home {
		return l.copy, nil
	}
	home := l.h.userHome()
	src, project, err := findLog(home, l.id)
	if err != nil {
		return nil, err
	}
	l.copy, l.copyHome = newLogCopy(src, filepath.Join(fp.home, "sessions", project, l.id, logName), home, fp.home), fp.home
	return l.copy, nil
}

// forkOn asks h's DSH server for a child of session id (session.fork, at
// the turn ending at seq atSeq when it is not negative) and reads the
// seed's newest page: only the seed's end matters, the fork's turn is
// read from there on.
func forkOn(ctx context.Context, h *Host, id string, atSeq int64) (*fork, error) {
	args := forkArgs{SessionID: id}
	if atSeq >= 0 {
		args.AtSeq = &atSeq
	}
	var res struct {
		SessionID string `json:"sessionId"`
	}
	if err := h.rpc.call(ctx, "session.fork", args, &res); err != nil {
		return nil, err
	}
	if res.SessionID == "" || res.SessionID == id {
		return nil, core.Errorf(core.CodeHarness, "dsh session.fork of %s returned session %q", id, res.SessionID)
	}
	f := &fork{}
	side := h.newLive(res.SessionID, -1, f.sink)
	var hv historyValue
	if err := h.rpc.call(ctx, "session.history", historyArgs{SessionID: res.SessionID, MaxMessages: followPage}, &hv); err != nil {
		_ = h.ArchiveSession(context.WithoutCancel(ctx), res.SessionID)
		return nil, err
	}
	side.priming = true
	for _, e := range hv.Events {
		ev := e.Event
		if side.m.feed(ev) && ev.Type == "turn/start" {
			side.turn = turnOf(ev)
		}
	}
	side.priming = false
	f.side = side
	return f, nil
}

// Ask runs one turn in the fork.
func (f *fork) Ask(ctx context.Context, prompt string) (core.ForkReply, error) {
	f.text.Reset()
	f.mu.Lock()
	f.usage = nil
	f.mu.Unlock()
	res, err := f.side.Prompt(ctx, []core.Content{{Type: "text", Text: prompt}})
	if err != nil {
		return core.ForkReply{}, err
	}
	if res.StopReason != "end_turn" {
		return core.ForkReply{}, core.Errorf(core.CodeHarness, "dsh: the fork's turn ended with %s", res.StopReason)
	}
	f.mu.Lock()
	u := f.usage
	f.mu.Unlock()
	return core.ForkReply{Text: f.text.String(), Usage: u}, nil
}

// Close archives the child session (DSH has no session delete; its log
// stays in DSH's home, out of its session list) and detaches from it.
func (f *fork) Close(ctx context.Context) error {
	err := f.side.h.ArchiveSession(ctx, f.side.id)
	_ = f.side.Close(ctx)
	if f.closed != nil {
		f.closed()
		f.closed = nil
	}
	return err
}
