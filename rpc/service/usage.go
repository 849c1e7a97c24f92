package service

import (
	"context"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// The usage ledger (ARCHITECTURE.md, The usage ledger): each adapter turns
// its harness's own usage report into usage.reported entries; usage with
// no cost is priced from Options.Prices as it is recorded (live turns and
// imports alike, core.PriceUsage); the store keeps an index of them that
// session/usage sums.

// SessionUsage sums what turns cost, from the store's ledger index.
func (s *Service) SessionUsage(ctx context.Context, p schema.SessionUsageParams) (schema.SessionUsageResult, error) {
	q := core.UsageQuery{SessionID: p.SessionID, GroupBy: p.GroupBy}
	switch p.GroupBy {
	case "":
		q.GroupBy = core.UsageBySession
	case core.UsageBySession, core.UsageByHarness, core.UsageByModel, core.UsageByDay:
	default:
		return schema.SessionUsageResult{}, invalidField("groupBy", "groupBy %q is not session, harness, model or day", p.GroupBy)
	}
	if p.Since != nil {
		q.Since = *p.Since
	}
	if p.Until != nil {
		q.Until = *p.Until
	}
	if p.Since != nil && p.Until != nil && !q.Until.After(q.Since) {
		return schema.SessionUsageResult{}, invalidField("until", "until must be after since")
	}
	for field, t := range map[string]*time.Time{"since": p.Since, "until": p.Until} {
		if t != nil && (t.Year() < 1970 || t.Year() > 2200) {
			return schema.SessionUsageResult{}, invalidField(field, "%s must be between the years 1970 and 2200", field)
		}
	}
	if p.SessionID != "" {
		if _, err := s.session(ctx, p.SessionID); err != nil {
			return schema.SessionUsageResult{}, err
		}
	}
	ledger, ok := s.opts.Store.(core.UsageLedger)
	if !ok {
		return schema.SessionUsageResult{}, core.Errorf(core.CodeUnavailable, "session/usage: this store keeps no usage ledger")
	}
	sums, err := ledger.Usage(ctx, q)
	if err != nil {
		return schema.SessionUsageResult{}, err
	}
	out := schema.SessionUsageResult{Groups: make([]schema.UsageGroup, 0, len(sums))}
	var total core.UsageSum
	for i, x := range sums {
		out.Groups = append(out.Groups, wireUsageSum(x))
		if i == 0 {
			total.Harness = x.Harness
		}
		total.Add(x)
	}
	out.Total = wireUsageSum(total)
	out.Total.Key = ""
	return out, nil
}

// wireUsageSum is x in the contract's shape.
func wireUsageSum(x core.UsageSum) schema.UsageGroup {
	return schema.UsageGroup{Key: x.Key, Harness: x.Harness, Reports: x.Reports, InputTokens: x.InputTokens,
		OutputTokens: x.OutputTokens, CacheReadTokens: x.CacheReadTokens, CacheWriteTokens: x.CacheWriteTokens,
		CostUSD: x.CostUSD, EstimatedUSD: x.EstimatedUSD, UnpricedReports: x.Unpriced}
}
