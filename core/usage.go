package core

import (
	"context"
	"encoding/json"
	"math"
	"time"
)

// KindUsageReported records what one turn cost, as the harness reported it
// (a transcript may report it per model response instead): the usage
// ledger (ARCHITECTURE.md, The usage ledger).
const KindUsageReported Kind = "usage.reported"

// Usage is the payload of a usage.reported entry. Tokens are counted as the
// harness counts them, normalised to four disjoint parts: input not read
// from the prompt cache, output, input read from the cache, and input
// written to it.
type Usage struct {
	// Model is the model the tokens were spent on ("" when not reported).
	Model            string `json:"model,omitempty"`
	InputTokens      int64  `json:"inputTokens"`
	OutputTokens     int64  `json:"outputTokens"`
	CacheReadTokens  int64  `json:"cacheReadTokens"`
	CacheWriteTokens int64  `json:"cacheWriteTokens"`
	// CostUSD is the harness's own cost, or (CostEstimated) Bridge's from
	// the configured price table; absent when neither is known.
	CostUSD       *float64 `json:"costUsd,omitempty"`
	CostEstimated bool     `json:"costEstimated,omitempty"`
	// At is when the harness reported it, when that is not when Bridge
	// recorded it (an imported transcript).
	At *time.Time `json:"at,omitempty"`
	// Scope is "turn" (one prompt's turn) or "response" (one model
	// response, as transcripts store it).
	Scope string `json:"scope,omitempty"`
	// TurnID is the harness's id of the turn, where it has one.
	TurnID string `json:"turnId,omitempty"`
}

// Zero reports whether u counts no tokens at all.
func (u Usage) Zero() bool {
	return u.InputTokens == 0 && u.OutputTokens == 0 && u.CacheReadTokens == 0 && u.CacheWriteTokens == 0
}

// Entry is u as a usage.reported entry with nativeID.
func (u Usage) Entry(nativeID string) NewEntry {
	return NewEntry{Kind: KindUsageReported, Payload: Payload(u), NativeID: nativeID}
}

// ParseUsage reads a usage.reported payload.
func ParseUsage(payload []byte) (Usage, bool) {
	var u Usage
	if json.Unmarshal(payload, &u) != nil {
		return Usage{}, false
	}
	return u, true
}

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead,omitempty"`
	CacheWrite float64 `json:"cacheWrite,omitempty"`
}

// Cost is what u costs at p, rounded to a millionth of a dollar.
func (p Price) Cost(u Usage) float64 {
	c := (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheWriteTokens)*p.CacheWrite) / 1e6
	return math.Round(c*1e6) / 1e6
}

// PriceUsage fills in the cost of usage.reported entries that have none
// from prices (by model), marked estimated; other entries, and usage whose
// model has no price, are returned as they are.
func PriceUsage(prices map[string]Price, es []NewEntry) []NewEntry {
	if len(prices) == 0 {
		return es
	}
	for i, e := range es {
		if e.Kind != KindUsageReported {
			continue
		}
		u, ok := ParseUsage(e.Payload)
		if !ok || u.CostUSD != nil {
			continue
		}
		p, ok := prices[u.Model]
		if !ok {
			continue
		}
		c := p.Cost(u)
		u.CostUSD, u.CostEstimated = &c, true
		es[i].Payload = Payload(u)
	}
	return es
}

// UsageGroupBy is what session/usage sums by.
type UsageGroupBy string

// Groupings.
const (
	UsageBySession UsageGroupBy = "session"
	UsageByHarness UsageGroupBy = "harness"
	UsageByModel   UsageGroupBy = "model"
	UsageByDay     UsageGroupBy = "day"
)

// UsageQuery asks the ledger for sums: of one session, or of every session
// in [Since, Until) (zero: unbounded), grouped.
type UsageQuery struct {
	SessionID string
	Since     time.Time
	Until     time.Time
	GroupBy   UsageGroupBy
}

// UsageSum is the ledger's sum over one group.
type UsageSum struct {
	// Key is the group's value: a session id, harness, model or day
	// (YYYY-MM-DD, UTC).
	Key string
	// Harness is the group's harness when the group has one harness.
	Harness          string
	Reports          int64
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	// CostUSD sums the costs known (the harnesses' own and the estimated);
	// EstimatedUSD is the estimated part; Unpriced counts the reports with
	// no cost at all.
	CostUSD      float64
	EstimatedUSD float64
	Unpriced     int64
}

// Add adds o's counts to u; the harness stays only when both have the
// same.
func (u *UsageSum) Add(o UsageSum) {
	if u.Harness != o.Harness {
		u.Harness = ""
	}
	u.Reports += o.Reports
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.CostUSD += o.CostUSD
	u.EstimatedUSD += o.EstimatedUSD
	u.Unpriced += o.Unpriced
}

// UsageLedger is implemented by stores that keep the usage ledger's index.
type UsageLedger interface {
	Usage(ctx context.Context, q UsageQuery) ([]UsageSum, error)
}
