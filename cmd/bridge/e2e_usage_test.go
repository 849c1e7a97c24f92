package main

import (
	"encoding/json"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fakemodel"
)

// TestUsageLedgerRealHarnesses drives real Claude Code and real Codex
// against the fake model, which reports input, output and prompt-cache
// tokens: each turn's usage.reported entries add up to exactly what the
// fake model reported to that harness, Claude Code's carry its own cost
// and Codex's (which reports none) the configured price, marked
// estimated; `bridge usage` sums them per harness and in total.
func TestUsageLedgerRealHarnesses(t *testing.T) {
	t.Parallel()
	price := map[string]float64{"input": 2, "output": 8, "cacheRead": 0.5, "cacheWrite": 0}
	h := newHarnessEnv(t, harnessOptions{Config: map[string]any{"prices": map[string]any{"fake-model": price}}})
	c := h.start(t)
	h.on("usage claude", func(fakemodel.Request) fakemodel.Reply {
		return fakemodel.Reply{Text: "claude answer", InputTokens: 1000, OutputTokens: 40, CacheReadTokens: 300, CacheWriteTokens: 200}
	})
	h.on("usage codex", func(fakemodel.Request) fakemodel.Reply {
		return fakemodel.Reply{Text: "codex answer", InputTokens: 2000, OutputTokens: 70, CacheReadTokens: 500}
	})
	from := len(h.fake.Requests())
	cc := h.create(t, c, "claude-code", "usage claude")
	cx := h.create(t, c, "codex", "usage codex")
	say(t, c, cc, "usage claude: first turn")
	say(t, c, cc, "usage claude: second turn")
	say(t, c, cx, "usage codex: first turn")
	say(t, c, cx, "usage codex: second turn")

	type sums struct{ Input, Output, CacheRead, CacheWrite int64 }
	reported := map[string]*sums{"claude-code": {}, "codex": {}}
	for _, r := range h.requestsSince(from) {
		s := reported[map[string]string{"anthropic": "claude-code", "responses": "codex"}[r.API]]
		if s == nil {
			continue
		}
		s.Input += r.Reported.InputTokens
		s.Output += r.Reported.OutputTokens
		s.CacheRead += r.Reported.CacheReadTokens
		s.CacheWrite += r.Reported.CacheWriteTokens
	}
	if reported["claude-code"].CacheWrite == 0 || reported["codex"].CacheRead == 0 {
		t.Fatalf("the fake model reported %+v %+v: want prompt-cache tokens for both", *reported["claude-code"], *reported["codex"])
	}

	var claudeCost float64
	for harness, sid := range map[string]string{"claude-code": cc, "codex": cx} {
		var got sums
		n := 0
		for _, e := range history(t, c, sid) {
			if e.Kind != "usage.reported" {
				continue
			}
			n++
			var u struct {
				Model                                                        string
				InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
				CostUSD                                                      *float64 `json:"costUsd"`
				CostEstimated                                                bool
			}
			if err := json.Unmarshal(e.Payload, &u); err != nil {
				t.Fatal(err)
			}
			got.Input += u.InputTokens
			got.Output += u.OutputTokens
			got.CacheRead += u.CacheReadTokens
			got.CacheWrite += u.CacheWriteTokens
			if u.CostUSD == nil {
				t.Fatalf("%s usage without a cost: %s", harness, e.Payload)
			}
			switch harness {
			case "claude-code":
				if u.CostEstimated {
					t.Errorf("Claude Code reports its own cost; the entry says estimated: %s", e.Payload)
				}
				claudeCost += *u.CostUSD
			case "codex":
				want := (float64(u.InputTokens)*price["input"] + float64(u.OutputTokens)*price["output"] +
					float64(u.CacheReadTokens)*price["cacheRead"]) / 1e6
				if !u.CostEstimated || math.Abs(*u.CostUSD-want) > 1e-6 || u.Model != "fake-model" {
					t.Errorf("Codex usage %s: want cost %.6f estimated from the price of fake-model", e.Payload, want)
				}
			}
		}
		if n < 2 {
			t.Errorf("%s: %d usage.reported entries, want one per turn at least", harness, n)
		}
		if got != *reported[harness] {
			t.Errorf("%s: usage entries sum to %+v, the fake model reported %+v", harness, got, *reported[harness])
		}
	}

	out, err := exec.Command(binPath, "--data-dir", h.dataDir, "usage", "--group-by", "harness", "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("bridge usage: %v\n%s", err, out)
	}
	var u struct {
		Groups []struct {
			Key                                                                   string
			Reports, InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
			CostUSD                                                               float64 `json:"costUsd"`
			EstimatedUSD                                                          float64 `json:"estimatedUsd"`
		}
		Total struct {
			InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
			CostUSD                                                      float64 `json:"costUsd"`
		}
	}
	if err := json.Unmarshal(out, &u); err != nil {
		t.Fatalf("bridge usage --json: %v\n%s", err, out)
	}
	var total sums
	for _, g := range u.Groups {
		s := reported[g.Key]
		if s == nil {
			t.Fatalf("bridge usage: group %q; want claude-code and codex only\n%s", g.Key, out)
		}
		if (sums{g.InputTokens, g.OutputTokens, g.CacheReadTokens, g.CacheWriteTokens}) != *s {
			t.Errorf("bridge usage: %s sums %+v, the fake model reported %+v", g.Key, g, *s)
		}
		if g.Key == "claude-code" && (math.Abs(g.CostUSD-claudeCost) > 1e-6 || g.EstimatedUSD != 0) {
			t.Errorf("bridge usage: claude-code costs %v (estimated %v), its entries say %v reported", g.CostUSD, g.EstimatedUSD, claudeCost)
		}
		if g.Key == "codex" && (g.EstimatedUSD == 0 || math.Abs(g.EstimatedUSD-g.CostUSD) > 1e-9) {
			t.Errorf("bridge usage: codex costs %v, estimated %v: want all of it estimated", g.CostUSD, g.EstimatedUSD)
		}
		total.Input += s.Input
		total.Output += s.Output
		total.CacheRead += s.CacheRead
		total.CacheWrite += s.CacheWrite
	}
	if len(u.Groups) != 2 || (sums{u.Total.InputTokens, u.Total.OutputTokens, u.Total.CacheReadTokens, u.Total.CacheWriteTokens}) != total {
		t.Errorf("bridge usage total %+v over %d groups, want %+v over 2", u.Total, len(u.Groups), total)
	}
	text, err := exec.Command(binPath, "--data-dir", h.dataDir, "usage", cc).CombinedOutput()
	if err != nil || !strings.Contains(string(text), cc) || !strings.Contains(string(text), "total") {
		t.Errorf("bridge usage %s: %v\n%s", cc, err, text)
	}
	c.exit(true)
}
