package schema

import (
	"encoding/json"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// UsageGroupBy is what session/usage sums by.
type UsageGroupBy = core.UsageGroupBy // core.UsageBySession…

// SessionUsageParams asks the usage ledger what turns cost: of one session,
// or of every session in a time range, grouped.
type SessionUsageParams struct {
	// SessionID keeps only this session's usage.
	SessionID string `json:"sessionId,omitempty"`
	// Since keeps only usage at or after this time.
	Since *time.Time `json:"since,omitempty"`
	// Until keeps only usage before this time.
	Until *time.Time `json:"until,omitempty"`
	// GroupBy is what to sum by: session (default), harness, model or day
	// (UTC).
	GroupBy UsageGroupBy `json:"groupBy,omitempty"`
}

// SessionUsageResult is the ledger's sums, one per group, and their total.
type SessionUsageResult struct {
	// Groups are the sums, ordered by key.
	Groups []UsageGroup `json:"groups"`
	// Total sums every group.
	Total UsageGroup `json:"total"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r SessionUsageResult) MarshalJSON() ([]byte, error) {
	type plain SessionUsageResult
	return json.Marshal(filled(plain(r)))
}

// UsageGroup is the sum of the usage reports of one group.
type UsageGroup struct {
	// Key is the group: a session id, a harness, a model or a day
	// (YYYY-MM-DD, UTC); absent on the total.
	Key string `json:"key,omitempty"`
	// Harness is the group's harness, when all its reports have one.
	Harness string `json:"harness,omitempty"`
	// Reports counts the usage reports (one per turn, or per model
	// response of an imported transcript).
	Reports int64 `json:"reports"`
	// InputTokens counts input tokens not read from the prompt cache.
	InputTokens int64 `json:"inputTokens"`
	// OutputTokens counts output tokens.
	OutputTokens int64 `json:"outputTokens"`
	// CacheReadTokens counts input tokens read from the prompt cache.
	CacheReadTokens int64 `json:"cacheReadTokens"`
	// CacheWriteTokens counts input tokens written to the prompt cache.
	CacheWriteTokens int64 `json:"cacheWriteTokens"`
	// CostUSD sums the costs known: the harnesses' own and those
	// estimated from the configured price table.
	CostUSD float64 `json:"costUsd"`
	// EstimatedUSD is the estimated part of CostUSD.
	EstimatedUSD float64 `json:"estimatedUsd"`
	// UnpricedReports counts the reports with no cost at all (the harness
	// gave none and the price table has no price for the model).
	UnpricedReports int64 `json:"unpricedReports"`
}
