package dsh

import (
	"context"
	"encoding/json"
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

// Fork asks DSH for a child of the live session (session.fork) and follows
// it from its seed's end: the seed is the conversation so far, not the
// fork's turn, so none of it reaches the fork's reply.
func (l *live) Fork(ctx context.Context) (core.Fork, error) {
	if err := l.ensureOpen("session.fork"); err != nil {
		return nil, err
	}
	var res struct {
		SessionID string `json:"sessionId"`
	}
	if err := l.h.rpc.call(ctx, "session.fork", sessionArgs{SessionID: l.id}, &res); err != nil {
		return nil, err
	}
	if res.SessionID == "" || res.SessionID == l.id {
		return nil, core.Errorf(core.CodeHarness, "dsh session.fork of %s returned session %q", l.id, res.SessionID)
	}
	f := &fork{}
	side := l.h.newLive(res.SessionID, -1, f.sink)
	// Only the seed's end matters (the fork's turn is read from there on):
	// its newest page, not the whole conversation again.
	var hv historyValue
	if err := l.h.rpc.call(ctx, "session.history", historyArgs{SessionID: res.SessionID, MaxMessages: followPage}, &hv); err != nil {
		_ = l.h.ArchiveSession(context.WithoutCancel(ctx), res.SessionID)
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
	return err
}
