package codex

import (
	"context"
	"encoding/json"

	"github.com/bridge-dev/bridge/adapters/internal/forkreply"
	"github.com/bridge-dev/bridge/core"
)

// fork is a discardable side copy of a live Codex thread: a second
// app-server process (at nice 10) that forks the thread from its rollout
// (thread/fork, ephemeral, so nothing is stored) with the live session's
// own options.
// The live process is not paused, restarted or told.
type fork struct {
	side *live
	text forkreply.Text // assistant text of the running Ask
}

// Fork starts the side process and forks the thread there.
func (l *live) Fork(ctx context.Context) (core.Fork, error) {
	id := l.thread()
	if id == "" {
		return nil, core.Errorf(core.CodeUnavailable, "codex: the session has no thread to fork yet")
	}
	req := l.req
	req.Approve = forkreply.Refuse
	l.mu.Lock()
	req.Model, req.Effort = l.model, l.effort
	l.mu.Unlock()
	f := &fork{}
	side, err := l.h.open(ctx, req, f.text.Sink, true)
	if err != nil {
		return nil, err
	}
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
		return nil, cerr
	}
	if res.Thread.ID == "" || res.Thread.ID == id {
		_ = side.p.close(context.WithoutCancel(ctx))
		return nil, core.Errorf(core.CodeHarness, "codex thread/fork of %s returned thread %q", id, res.Thread.ID)
	}
	side.mu.Lock()
	side.threadID = res.Thread.ID
	side.mu.Unlock()
	f.side = side
	return f, nil
}

// Ask runs one turn in the fork.
func (f *fork) Ask(ctx context.Context, prompt string) (core.ForkReply, error) {
	f.text.Reset()
	res, err := f.side.Prompt(ctx, []core.Content{{Type: "text", Text: prompt}})
	if err != nil {
		return core.ForkReply{}, err
	}
	if res.StopReason != "end_turn" {
		return core.ForkReply{}, core.Errorf(core.CodeHarness, "codex: the fork's turn ended with %s", res.StopReason)
	}
	f.side.mu.Lock()
	u := f.side.usage
	f.side.mu.Unlock()
	return core.ForkReply{Text: f.text.String(), Usage: u}, nil
}

// Close stops the side process.
func (f *fork) Close(ctx context.Context) error { return f.side.Close(ctx) }

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
