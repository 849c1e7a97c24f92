package claudecode

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// The usage ledger (ARCHITECTURE.md, The usage ledger): a result line's
// model_usage_since_last_result gives, per model, the tokens and the cost
// of the turn it ends; each becomes a usage.reported entry. Without it (an
// older Claude Code) the result's usage gives the tokens, with no cost. An
// on-disk transcript has no result lines: each model response's usage
// (message.usage of its assistant lines) becomes one instead, at the
// response's time.

// modelUsage is one model's entry of model_usage_since_last_result.
type modelUsage struct {
	InputTokens              int64    `json:"inputTokens"`
	OutputTokens             int64    `json:"outputTokens"`
	CacheReadInputTokens     int64    `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64    `json:"cacheCreationInputTokens"`
	CostUSD                  *float64 `json:"costUSD"`
}

// apiUsage reads a Messages API usage object (a result line's or a
// response's) as usage of model; false when there is none.
func apiUsage(raw json.RawMessage, model string) (core.Usage, bool) {
	t := resultUsage(raw)
	if t == nil {
		return core.Usage{}, false
	}
	return core.Usage{Model: model, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens,
		CacheReadTokens: t.CacheReadTokens, CacheWriteTokens: t.CacheCreationTokens}, true
}

// turnUsage maps a result line's usage to usage.reported entries, in
// model order; nativeID is the result line's.
func turnUsage(m *streamMsg, nativeID string, model string) []core.Event {
	var out []core.Event
	if len(m.SinceLastResult) > 0 {
		models := make([]string, 0, len(m.SinceLastResult))
		for k := range m.SinceLastResult {
			models = append(models, k)
		}
		sort.Strings(models)
		for _, k := range models {
			mu := m.SinceLastResult[k]
			u := core.Usage{Model: k, InputTokens: mu.InputTokens, OutputTokens: mu.OutputTokens,
				CacheReadTokens: mu.CacheReadInputTokens, CacheWriteTokens: mu.CacheCreationInputTokens,
				CostUSD: mu.CostUSD, Scope: "turn"}
			if u.Zero() && (u.CostUSD == nil || *u.CostUSD == 0) {
				continue
			}
			e := u.Entry(nativeID + ":usage:" + k)
			out = append(out, core.Event{Entry: &e})
		}
		return out
	}
	u, ok := apiUsage(m.Usage, model)
	if !ok || u.Zero() {
		return nil
	}
	u.Scope = "turn"
	e := u.Entry(nativeID + ":usage")
	return []core.Event{{Entry: &e}}
}

// responseUsage is the usage of one model response in an on-disk
// transcript, kept until the response's last line has been read (each
// content block is a line of its own, repeating the usage as it grows).
type responseUsage struct {
	id string
	u  core.Usage
}

// noteResponse keeps the usage of an assistant line of an on-disk
// transcript; it returns the previous response's usage entry once a line
// of another response arrives.
func (im *importer) noteResponse(msg *apiMessage, raw []byte) []core.NewEntry {
	if msg == nil || msg.ID == "" || len(msg.Usage) == 0 || msg.Model == "<synthetic>" {
		return nil
	}
	u, ok := apiUsage(msg.Usage, msg.Model)
	if !ok {
		return nil
	}
	var line struct {
		Timestamp time.Time `json:"timestamp"`
	}
	_ = json.Unmarshal(raw, &line)
	u.Scope = "response"
	if !line.Timestamp.IsZero() {
		at := line.Timestamp.UTC()
		u.At = &at
	}
	var out []core.NewEntry
	if im.response != nil && im.response.id != msg.ID {
		out = im.takeResponse()
	}
	im.response = &responseUsage{id: msg.ID, u: u}
	return out
}

// takeResponse returns the kept response's usage entry, if any.
func (im *importer) takeResponse() []core.NewEntry {
	r := im.response
	im.response = nil
	if r == nil || r.u.Zero() {
		return nil
	}
	return []core.NewEntry{r.u.Entry("usage:" + r.id)}
}
