package codex

import (
	"encoding/json"

	"github.com/bridge-dev/bridge/core"
)

// The usage ledger (ARCHITECTURE.md, The usage ledger): Codex reports the
// thread's running token totals (thread/tokenUsage/updated, tokenUsage.total)
// as it goes; a turn's usage is the growth of the totals from the end of
// the turn before (or, in a process that resumed a thread, from just before
// the first response it reported) to the turn's end, recorded as one
// usage.reported entry when the turn completes. Codex gives no cost: a
// configured price table fills it in, marked estimated. Its inputTokens
// include the cached ones; the entry counts them apart (inputTokens is the
// part not read from the cache).

// tokenBreakdown is Codex's TokenUsageBreakdown.
type tokenBreakdown struct {
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
}

func (b tokenBreakdown) minus(o tokenBreakdown) tokenBreakdown {
	return tokenBreakdown{InputTokens: b.InputTokens - o.InputTokens, CachedInputTokens: b.CachedInputTokens - o.CachedInputTokens,
		CacheWriteInputTokens: b.CacheWriteInputTokens - o.CacheWriteInputTokens, OutputTokens: b.OutputTokens - o.OutputTokens}
}

// ledger follows the totals between turn ends; guarded by mapper.mu.
type ledger struct {
	seen  bool
	base  tokenBreakdown // the totals at the end of the previous turn
	total tokenBreakdown // the latest totals
	model string         // the thread's model, from thread/started
}

// noteTotals takes one thread/tokenUsage/updated's totals.
func (g *ledger) noteTotals(params json.RawMessage) {
	var p struct {
		TokenUsage struct {
			Total *tokenBreakdown `json:"total"`
			Last  tokenBreakdown  `json:"last"`
		} `json:"tokenUsage"`
	}
	if json.Unmarshal(params, &p) != nil || p.TokenUsage.Total == nil {
		return
	}
	if !g.seen {
		g.seen = true
		g.base = p.TokenUsage.Total.minus(p.TokenUsage.Last)
	}
	g.total = *p.TokenUsage.Total
}

// turnEnded returns the usage.reported entry of turn, which just ended
// (nil when the totals did not grow).
func (g *ledger) turnEnded(turn string) *core.Event {
	d := g.total.minus(g.base)
	g.base = g.total
	u := core.Usage{Model: g.model, InputTokens: d.InputTokens - d.CachedInputTokens, OutputTokens: d.OutputTokens,
		CacheReadTokens: d.CachedInputTokens, CacheWriteTokens: d.CacheWriteInputTokens, Scope: "turn", TurnID: turn}
	if u.Zero() || u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 {
		return nil
	}
	e := u.Entry("usage:" + turn)
	return &core.Event{Entry: &e}
}

// useModel names the model turns run on from now on (session/selectModel).
func (m *mapper) useModel(model string) {
	m.mu.Lock()
	m.ledger.model = model
	m.mu.Unlock()
}

// A rollout file records the same totals as token_count events
// (info.total_token_usage, info.last_token_usage, in snake case) and each
// turn's end as task_complete: an import records each turn's usage as the
// live mapping does, under the same native id ("usage:" + the turn id), at
// the time of the turn's end, so a thread imported after it was driven
// live adds no usage twice.

// rolloutTokens is a rollout's TokenUsage.
type rolloutTokens struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
}

func (t rolloutTokens) breakdown() tokenBreakdown {
	return tokenBreakdown{InputTokens: t.InputTokens, CachedInputTokens: t.CachedInputTokens,
		CacheWriteInputTokens: t.CacheWriteInputTokens, OutputTokens: t.OutputTokens}
}

// rolloutUsage follows a rollout's totals between turn ends.
type rolloutUsage struct{ g ledger }

// noteTotals takes one token_count event's payload.
func (r *rolloutUsage) noteTotals(payload json.RawMessage) {
	var p struct {
		Info *struct {
			Total *rolloutTokens `json:"total_token_usage"`
			Last  rolloutTokens  `json:"last_token_usage"`
		} `json:"info"`
	}
	if json.Unmarshal(payload, &p) != nil || p.Info == nil || p.Info.Total == nil {
		return
	}
	if !r.g.seen {
		r.g.seen = true
		r.g.base = p.Info.Total.breakdown().minus(p.Info.Last.breakdown())
	}
	r.g.total = p.Info.Total.breakdown()
}

// turnEnded returns the usage.reported entry of turn (on model), which
// just ended, or nil.
func (r *rolloutUsage) turnEnded(turn, model string) *core.NewEntry {
	if turn == "" || !r.g.seen {
		return nil
	}
	r.g.model = model
	ev := r.g.turnEnded(turn)
	if ev == nil {
		return nil
	}
	return ev.Entry
}
