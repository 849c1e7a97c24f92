package acp

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// The usage ledger over ACP (ARCHITECTURE.md, The usage ledger): a
// session/prompt answer carries the turn's usage (ACP's unstable `usage`:
// the usage.reported entries recorded for the session while the prompt was
// open, summed; Bridge's counts are disjoint, so totalTokens is their sum
// and thought tokens are within outputTokens), and when the session's cost
// is known, a usage_update with the last context reading carries the
// session's cumulative cost in USD, as ACP agents send it.

// sessionTotal is the session's ledger total (ok false when the ledger
// cannot say).
func (s *Server) sessionTotal(ctx context.Context, sessionID string) (schema.UsageGroup, bool) {
	r, err := s.b.SessionUsage(ctx, schema.SessionUsageParams{SessionID: sessionID})
	if err != nil {
		s.log.Debug("acp: usage of a session", "session", sessionID, "error", err)
		return schema.UsageGroup{}, false
	}
	return r.Total, true
}

// turnUsage adds the turn's usage to res (the session/prompt answer): the
// growth of the session's ledger since before, and sends the session's
// cost with the last context reading.
func (s *Server) turnUsage(ctx context.Context, sessionID string, before schema.UsageGroup, ok bool, res *promptResult) {
	if !ok {
		return
	}
	after, ok := s.sessionTotal(ctx, sessionID)
	if !ok || after.Reports <= before.Reports {
		return
	}
	in := after.InputTokens - before.InputTokens
	out := after.OutputTokens - before.OutputTokens
	cr := after.CacheReadTokens - before.CacheReadTokens
	cw := after.CacheWriteTokens - before.CacheWriteTokens
	res.Usage = &promptUsage{TotalTokens: in + out + cr + cw, InputTokens: in, OutputTokens: out,
		CachedReadTokens: cr, CachedWriteTokens: cw}
	sess := s.opened(sessionID)
	if sess == nil || after.CostUSD <= 0 {
		return
	}
	sess.mu.Lock()
	g, have := sess.gauge, sess.haveGauge
	sess.mu.Unlock()
	if have {
		s.send(sessionID, update{SessionUpdate: "usage_update", Used: &g.Used, Size: &g.Size,
			Cost: &cost{Amount: after.CostUSD, Currency: "USD"}})
	}
}

// noteGauge keeps a session's last context reading.
func (sess *session) noteGauge(g core.Gauge) {
	sess.mu.Lock()
	sess.gauge, sess.haveGauge = g, true
	sess.mu.Unlock()
}
