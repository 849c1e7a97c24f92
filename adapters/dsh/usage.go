package dsh

import (
	"encoding/json"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// The usage ledger (ARCHITECTURE.md, The usage ledger): DSH records each
// model request's usage on the assistant/message that answers it (an empty
// one when the answer had no message content), as DISJOINT counts: input
// not read from the cache, output (reasoning included, as DeepSeek counts
// completion tokens), cache reads and cache writes. Each becomes a
// usage.reported entry (scope "response") at the event's time, the same
// from the live event stream and from a session log import, under the
// message's seq, so reading a session twice adds nothing. DSH gives no
// cost: a configured price table fills it in, marked estimated. DSH's
// compaction summaries are requested outside the log and record no usage.

// requestUsage is DSH's TokenUsage of one model call.
type requestUsage struct {
	InputTokens      int64 `json:"inputTokens"`
	OutputTokens     int64 `json:"outputTokens"`
	CacheReadTokens  int64 `json:"cacheReadTokens"`
	CacheWriteTokens int64 `json:"cacheWriteTokens"`
}

// usageEntry emits the usage.reported entry of an assistant/message's usage
// (raw) on model; id is the message's native id.
func (m *mapper) usageEntry(ev Event, id string, raw json.RawMessage, model string) {
	var r *requestUsage
	if len(raw) == 0 || json.Unmarshal(raw, &r) != nil || r == nil {
		return
	}
	u := core.Usage{Model: model, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		CacheReadTokens: r.CacheReadTokens, CacheWriteTokens: r.CacheWriteTokens, Scope: "response"}
	if u.Zero() || u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 {
		return
	}
	if u.Model == "" {
		u.Model = m.model
		if _, bare, ok := strings.Cut(m.model, "/"); ok {
			u.Model = bare
		}
	}
	if t := msTime(ev.Time); !t.IsZero() {
		u.At = &t
	}
	m.emit(u.Entry(id + ":usage"))
}
