package acp

import (
	"context"
	"fmt"

	"github.com/bridge-dev/bridge/adapters/internal/forkreply"
	"github.com/bridge-dev/bridge/core"
)

var _ core.Forker = (*live)(nil)

// fork is a discardable side copy of a live ACP session: a second agent
// process (at nice 10, with the processes it starts) in which the unstable session/fork copies the live session into
// a new one. The live agent process is not paused, restarted or told; the
// side process (and with it whatever the fork holds in memory) is stopped
// by Close.
type fork struct {
	side *live
	text forkreply.Text // assistant text of the running Ask
}

// forkMeta asks agents built on the Claude Agent SDK (claude-code-acp,
// claude-agent-acp: their _meta.claudeCode.options) to store no transcript
// for the fork; other agents ignore it (_meta is ACP's extension point).
var forkMeta = &forkSessionMeta{ClaudeCode: forkMetaClaudeCode{Options: forkMetaOptions{PersistSession: false}}}

// Fork starts a second agent process and forks the live session there
// with session/fork, when the agent advertises sessionCapabilities.fork.
func (l *live) Fork(ctx context.Context) (core.Fork, error) {
	if !present(l.a.init.AgentCapabilities.SessionCapabilities.Fork) {
		return nil, unsupported("the agent does not advertise sessionCapabilities.fork")
	}
	id := l.NativeID()
	if id == "" {
		return nil, core.Errorf(core.CodeUnavailable, "acp: the session has no id to fork yet")
	}
	req := l.req
	req.Approve = forkreply.Refuse
	f := &fork{}
	side, err := l.h.open(ctx, req, f.text.Sink, true)
	if err != nil {
		return nil, err
	}
	raw, err := side.a.call(ctx, "session/fork", forkSessionParams{SessionID: id, Cwd: absDir(l.cwd(req.Cwd)),
		McpServers: []any{}, Meta: forkMeta})
	if err == nil {
		err = side.started(raw, "")
	}
	if err == nil && side.NativeID() == id {
		err = core.Errorf(core.CodeHarness, "acp: session/fork of %s returned the same session", id)
	}
	if err != nil {
		side.a.stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("acp: fork session %s: %w%s", id, err, side.a.tailNote())
	}
	f.side = side
	return f, nil
}

// Ask runs one turn in the fork.
func (f *fork) Ask(ctx context.Context, prompt string) (core.ForkReply, error) {
	f.text.Reset()
	res, err := f.side.run(ctx, []contentBlock{{Type: "text", Text: prompt}})
	if err != nil {
		return core.ForkReply{}, err
	}
	if res.StopReason != "end_turn" {
		return core.ForkReply{}, core.Errorf(core.CodeHarness, "acp: the fork's turn ended with %s", res.StopReason)
	}
	f.side.mu.Lock()
	u := f.side.usage
	f.side.mu.Unlock()
	return core.ForkReply{Text: f.text.String(), Usage: u}, nil
}

// Close stops the side agent process.
func (f *fork) Close(ctx context.Context) error { return f.side.Close(ctx) }
