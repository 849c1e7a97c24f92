package opencode

import (
	"github.com/bridge-dev/bridge/core"
)

// The usage ledger (ARCHITECTURE.md, The usage ledger): OpenCode ends each
// model request of a turn (a step) with a step-finish part carrying the
// step's tokens and cost; each becomes a usage.reported entry (scope
// "response"), the same from the live event stream, `opencode export` and
// OpenCode's database, under the part's id, so reading a session twice adds
// nothing. OpenCode's counts are already disjoint (input excludes the
// cache reads and writes) but keep reasoning apart from output: the entry
// counts reasoning as output, as the provider bills it. OpenCode's cost is
// its own estimate from its model table; it is 0 for a model it has no
// price for, so only a positive cost is kept (a configured price table
// fills the others, marked estimated).

// stepUsage is the usage.reported entry of a step-finish part of message
// info (nil when unknown; fallback then names the model), or nothing when
// the part reports no usage.
func stepUsage(p part, info *messageInfo, fallback string) []core.NewEntry {
	t := p.Tokens
	if t == nil {
		return nil
	}
	u := core.Usage{InputTokens: t.Input, OutputTokens: t.Output + t.Reasoning, CacheReadTokens: t.Cache.Read,
		CacheWriteTokens: t.Cache.Write, Scope: "response"}
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 {
		return nil
	}
	if p.Cost != nil && *p.Cost > 0 {
		c := *p.Cost
		u.CostUSD = &c
	}
	if u.Zero() && u.CostUSD == nil {
		return nil
	}
	_, u.Model = splitModel(fallback)
	if info != nil {
		if info.ModelID != "" {
			u.Model = info.ModelID
		}
		if at := msTime(info.Time.Completed); !at.IsZero() {
			u.At = &at
		}
	}
	return []core.NewEntry{u.Entry(p.ID)}
}
