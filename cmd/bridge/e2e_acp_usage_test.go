package main

import (
	"context"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/acp"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// TestBridgeACPCarriesUsage: `bridge acp --harness codex` (real Codex
// against the fake model, a price configured for its model) answers each
// session/prompt with the turn's usage from its ledger and sends the
// session's cumulative cost with the context reading in usage_update, as
// ACP agents do (ACP's cost rides on usage_update, which needs a context
// reading: over a harness without a gauge, such as Claude Code, the
// client gets the tokens only). Bridge's own ACP consumer driving it
// records one usage.reported entry per turn whose tokens add up to exactly
// what the fake model reported, and whose costs add up to the serving
// Bridge's ledger.
func TestBridgeACPCarriesUsage(t *testing.T) {
	t.Parallel()
	price := map[string]float64{"input": 2, "output": 8, "cacheRead": 0.5}
	h := newHarnessEnv(t, harnessOptions{Config: map[string]any{"prices": map[string]any{"fake-model": price}}})
	h.on("acp usage", func(fakemodel.Request) fakemodel.Reply {
		return fakemodel.Reply{Text: "counted over ACP", InputTokens: 1300, OutputTokens: 33, CacheReadTokens: 250}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	consumer := acp.New(acp.Config{Name: "acp", Command: binPath, Args: []string{"--data-dir", h.dataDir, "acp", "--harness", "codex"}})
	var mu = make(chan struct{}, 1)
	var entries []core.NewEntry
	l, err := consumer.CreateSession(ctx, core.CreateRequest{Cwd: h.cwd}, func(ev core.Event) {
		if ev.Entry != nil {
			mu <- struct{}{}
			entries = append(entries, *ev.Entry)
			<-mu
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	from := len(h.fake.Requests())
	for _, p := range []string{"acp usage: one", "acp usage: two"} {
		if res, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: p}}); err != nil || res.StopReason != "end_turn" {
			t.Fatalf("Prompt(%q) = %+v, %v", p, res, err)
		}
	}
	// The turns' requests, counted before Close: the shutdown checkpoint
	// Close brings is asked of a fork, whose usage the checkpoint records
	// (forkUsage), not the ledger.
	var want, got fakemodel.Usage
	for _, r := range h.requestsSince(from) {
		want.InputTokens += r.Reported.InputTokens
		want.OutputTokens += r.Reported.OutputTokens
		want.CacheReadTokens += r.Reported.CacheReadTokens
		want.CacheWriteTokens += r.Reported.CacheWriteTokens
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var cost float64
	n := 0
	mu <- struct{}{}
	for _, e := range entries {
		if e.Kind != core.KindUsageReported {
			continue
		}
		u, _ := core.ParseUsage(e.Payload)
		n++
		got.InputTokens += u.InputTokens
		got.OutputTokens += u.OutputTokens
		got.CacheReadTokens += u.CacheReadTokens
		got.CacheWriteTokens += u.CacheWriteTokens
		if u.CostUSD == nil || *u.CostUSD <= 0 || u.CostEstimated {
			t.Errorf("usage over ACP %s: want the cost Bridge sent (the growth of the session's cost)", e.Payload)
		} else {
			cost += *u.CostUSD
		}
	}
	<-mu
	if n != 2 || got != want || want.CacheReadTokens == 0 {
		t.Fatalf("the consumer recorded %d usage.reported summing %+v; the fake model reported %+v", n, got, want)
	}
	gs := usageGroups(t, h.dataDir, "harness")
	if len(gs) != 1 || gs[0].Key != "codex" || gs[0].InputTokens != want.InputTokens || gs[0].CostUSD-cost > 1e-6 || cost-gs[0].CostUSD > 1e-6 {
		t.Errorf("the serving Bridge's ledger %+v; the consumer recorded %+v costing %v", gs, got, cost)
	}
}
