package claudecode

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/bridge-dev/bridge/adapters/internal/forkreply"
	"github.com/bridge-dev/bridge/core"
)

// fork is a discardable side process of a live session: `claude --resume
// <id> --fork-session --no-session-persistence` with the live session's own
// options, so its requests share the live conversation's history and
// prompt-cache prefix. The live process is not paused, restarted or told;
// the fork gets a session id of its own and stores no transcript.
type fork struct {
	side *live
	text forkreply.Text // assistant text of the running Ask
}

// Fork starts a side process holding a copy of the conversation as it
// stands (its stored transcript) and returns once it is ready for a turn.
func (l *live) Fork(ctx context.Context) (core.Fork, error) {
	id := l.NativeID()
	if id == "" || l.host == nil {
		return nil, core.Errorf(core.CodeUnavailable, "claude-code: the session has no id to fork yet")
	}
	req := l.req
	req.Approve = forkreply.Refuse
	l.mu.Lock()
	if l.selModel != "" {
		req.Model = l.selModel
	}
	if l.selEffort != "" {
		req.Effort = l.selEffort
	}
	l.mu.Unlock()
	f := &fork{}
	side, err := l.host.start(ctx, req, "--resume", id, f.text.Sink, "--fork-session", "--no-session-persistence")
	if err != nil {
		return nil, core.E(core.CodeHarness, "claude-code: the fork of session "+id+" did not start", err)
	}
	f.side = side
	return f, nil
}

// Ask runs one turn in the fork.
func (f *fork) Ask(ctx context.Context, prompt string) (core.ForkReply, error) {
	f.text.Reset()
	m, _, err := f.side.runTurn(ctx, []core.Content{{Type: "text", Text: prompt}})
	if err != nil {
		return core.ForkReply{}, err
	}
	if stopReason(m, false) == "error" {
		why := strings.Join(m.Errors, "; ")
		if why == "" {
			why = m.Result
		}
		return core.ForkReply{}, core.Errorf(core.CodeHarness, "claude-code: the fork's turn failed: %s", why)
	}
	return core.ForkReply{Text: f.text.String(), Usage: resultUsage(m.Usage)}, nil
}

// Close stops the side process.
func (f *fork) Close(ctx context.Context) error { return f.side.Close(ctx) }

// resultUsage reads a result line's usage; nil when it has none.
func resultUsage(raw json.RawMessage) *core.TokenUsage {
	var u struct {
		Input         *int64 `json:"input_tokens"`
		Output        int64  `json:"output_tokens"`
		CacheRead     int64  `json:"cache_read_input_tokens"`
		CacheCreation int64  `json:"cache_creation_input_tokens"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &u) != nil || u.Input == nil {
		return nil
	}
	return &core.TokenUsage{InputTokens: *u.Input, OutputTokens: u.Output, CacheReadTokens: u.CacheRead, CacheCreationTokens: u.CacheCreation}
}
