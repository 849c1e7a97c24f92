package acp

import (
	"encoding/json"
	"math"

	"github.com/bridge-dev/bridge/core"
)

// The usage ledger (ARCHITECTURE.md, The usage ledger): an ACP agent may
// report a turn's tokens in the session/prompt result (the unstable
// `usage`: inputTokens, outputTokens, thoughtTokens, cachedReadTokens,
// cachedWriteTokens, totalTokens) and the session's cumulative cost in
// usage_update (`cost: {amount, currency}`). Each turn that reports
// either becomes one usage.reported entry (scope "turn"): the result's
// tokens, and as cost the growth of the cumulative US-dollar cost since the
// end of the turn before in this agent process (a cost in another
// currency is not kept). Agents differ on whether their counts overlap;
// totalTokens says which: thought tokens counted apart from output are
// added to it, and cache reads counted within input are taken out of it,
// so that the entry's four counts are disjoint.

// promptUsage is the unstable Usage of a session/prompt result.
type promptUsage struct {
	TotalTokens       int64 `json:"totalTokens"`
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	ThoughtTokens     int64 `json:"thoughtTokens"`
	CachedReadTokens  int64 `json:"cachedReadTokens"`
	CachedWriteTokens int64 `json:"cachedWriteTokens"`
}

// usageCost is usage_update's cumulative cost.
type usageCost struct {
	Amount   *float64 `json:"amount"`
	Currency string   `json:"currency"`
}

// noteCost takes a usage_update's cost (nil: none reported).
func (m *mapper) noteCost(c *usageCost) {
	if c == nil || c.Amount == nil || c.Currency != "USD" || math.IsNaN(*c.Amount) || math.IsInf(*c.Amount, 0) {
		return
	}
	m.cost, m.haveCost = *c.Amount, true
}

// settleCost makes the cost known so far the base of the next turn's (the
// end of a session/load replay, whose readings are history).
func (m *mapper) settleCost() { m.costBase = m.cost }

// turnUsage is the usage.reported entry of the turn that result (the
// session/prompt result) ends, on model; nothing when the turn reported
// neither tokens nor cost.
func (m *mapper) turnUsage(result json.RawMessage, model string) []core.Event {
	var r struct {
		Usage *promptUsage `json:"usage"`
	}
	_ = json.Unmarshal(result, &r)
	u := core.Usage{Model: model, Scope: "turn"}
	if p := r.Usage; p != nil {
		u.InputTokens, u.OutputTokens = p.InputTokens, p.OutputTokens
		u.CacheReadTokens, u.CacheWriteTokens = p.CachedReadTokens, p.CachedWriteTokens
		disjoint := p.InputTokens + p.OutputTokens + p.CachedReadTokens + p.CachedWriteTokens
		apart := int64(0)
		if p.ThoughtTokens > 0 && (p.TotalTokens == disjoint+p.ThoughtTokens || p.TotalTokens == disjoint-p.CachedReadTokens+p.ThoughtTokens) {
			apart = p.ThoughtTokens
			u.OutputTokens += apart
		}
		if p.CachedReadTokens > 0 && p.TotalTokens == disjoint-p.CachedReadTokens+apart {
			u.InputTokens -= p.CachedReadTokens
		}
		if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 {
			u = core.Usage{Model: model, Scope: "turn"}
		}
	}
	if m.haveCost {
		if d := m.cost - m.costBase; d > 0 {
			d = math.Round(d*1e9) / 1e9
			u.CostUSD = &d
		}
		m.costBase = m.cost
	}
	if u.Zero() && u.CostUSD == nil {
		return nil
	}
	return []core.Event{m.entry(core.KindUsageReported, "usage", u)}
}

// currentModel is the session's model as the agent names it ("" when it
// does not say).
func currentModel(s *sessionSetup) string {
	if s.Models != nil && s.Models.CurrentModelID != "" {
		return s.Models.CurrentModelID
	}
	if opt := modelOption(s); opt != nil {
		var v string
		if json.Unmarshal(opt.CurrentValue, &v) == nil {
			return v
		}
	}
	return ""
}
