package opencode

import (
	"context"
	"net/http"
	"net/url"

	"github.com/bridge-dev/bridge/adapters/internal/forkreply"
	"github.com/bridge-dev/bridge/core"
)

var _ core.Forker = (*live)(nil)

// fork is a discardable side copy of a live OpenCode session: a session
// that OpenCode's own fork route (POST /session/{id}/fork) copied, with the
// live session's model, agent and variant, on the fork server
// (forkserver.go) from its replica of the live session (replica.go) once
// it answers, else on the live server from the live session itself. The
// live session is not paused or told; the fork's events go only to the
// fork, and Close deletes the forked session.
type fork struct {
	side *live
	text forkreply.Text // assistant text of the running Ask
}

// Fork copies the session as it stands (every message) into a new session
// on the fork server, or on the live server while the fork server starts
// (the first fork starts it), when the session's preset turns the fork
// server off (core.Preset.ForkServer), or when the live database cannot
// be read for the replica (OPENCODE_DB=:memory: for the live server).
func (l *live) Fork(ctx context.Context) (core.Fork, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	wants := l.req.Preset.WantsForkServer()
	l.mu.Unlock()
	srv := l.srv
	if wants {
		srv = l.h.forkServerFor(l.srv)
	}
	if srv != l.srv {
		// The fork server's database is its own: it forks its replica of
		// the session (replica.go), brought up to date first. Where the
		// replica cannot be made, the fork is made on the live server.
		if err := l.h.replicate(ctx, srv, l.id, l.dir); err != nil {
			if ctx.Err() != nil {
				return nil, domainError(srv, "replicate the session on the fork server", err)
			}
			srv = l.srv
		}
	}
	var info sessionInfo
	if err := l.h.do(ctx, srv, http.MethodPost, l.path("/fork"), dirQuery(l.dir), struct{}{}, &info); err != nil {
		return nil, domainError(srv, "fork session", err)
	}
	if info.ID == "" || info.ID == l.id {
		return nil, core.Errorf(core.CodeHarness, "opencode: POST /session/%s/fork answered session %q", l.id, info.ID)
	}
	f := &fork{}
	side := l.h.newLive(srv, info.ID, l.dir, f.text.Sink)
	l.mu.Lock()
	req := l.req
	side.provider, side.model, side.agent, side.variant = l.provider, l.model, l.agent, l.variant
	l.mu.Unlock()
	req.Approve = forkreply.Refuse
	side.mu.Lock()
	side.req = req
	side.mu.Unlock()
	f.side = side
	return f, nil
}

// Ask runs one turn in the fork and reports the tokens of its reply.
func (f *fork) Ask(ctx context.Context, prompt string) (core.ForkReply, error) {
	f.text.Reset()
	res, info, err := f.side.prompt(ctx, []core.Content{{Type: "text", Text: prompt}})
	if err != nil {
		return core.ForkReply{}, err
	}
	if res.StopReason != "end_turn" {
		return core.ForkReply{}, core.Errorf(core.CodeHarness, "opencode: the fork's turn ended with %s", res.StopReason)
	}
	var u *core.TokenUsage
	if t := info.Tokens; t != nil {
		u = &core.TokenUsage{InputTokens: t.Input, OutputTokens: t.Output, CacheReadTokens: t.Cache.Read,
			CacheCreationTokens: t.Cache.Write}
	}
	return core.ForkReply{Text: f.text.String(), Usage: u}, nil
}

// Close deletes the forked session (DELETE /session/{id}) and detaches it.
func (f *fork) Close(ctx context.Context) error {
	var err error
	if !f.side.srv.dead() {
		if derr := f.side.h.do(ctx, f.side.srv, http.MethodDelete, "/session/"+url.PathEscape(f.side.id),
			dirQuery(f.side.dir), nil, nil); derr != nil {
			err = domainError(f.side.srv, "delete the fork", derr)
		}
	}
	if cerr := f.side.Close(ctx); err == nil {
		err = cerr
	}
	return err
}
