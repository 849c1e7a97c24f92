package acp_test

import (
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/acp"
	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// TestRealAgentsUsage: the real claude-agent-acp reports each turn's
// tokens in the session/prompt result and the session's cost in
// usage_update; the adapter records one usage.reported entry per turn, and
// over two turns the entries add up to exactly what the fake model
// reported for the turns' requests (input, output, prompt cache reads and
// writes, kept disjoint), each with Claude Code's own cost (the growth of
// the cumulative cost), not an estimate. (claude-code-acp 0.16.2 reports
// no usage; codex-acp 0.16.0 reports the context gauge only, no turn
// tokens and no cost: their turns record no usage.reported.)
func TestRealAgentsUsage(t *testing.T) {
	for _, a := range realACPAgents[1:2] {
		a := a
		t.Run(a.bin, func(t *testing.T) {
			bin := adaptertest.FindBinary(t, a.bin)
			t.Logf("target: %s %s", a.pkg, npmVersion(t, a.pkg))
			fake, err := fakemodel.Start()
			if err != nil {
				t.Fatal(err)
			}
			defer fake.Close()
			fake.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
				switch {
				case strings.Contains(r.LastUserText, "usage one"):
					return fakemodel.Reply{Text: "first", InputTokens: 1400, OutputTokens: 30, CacheReadTokens: 600, CacheWriteTokens: 200}, true
				case strings.Contains(r.LastUserText, "usage two"):
					return fakemodel.Reply{Text: "second", InputTokens: 1900, OutputTokens: 45, CacheReadTokens: 800, CacheWriteTokens: 100}, true
				}
				return fakemodel.Reply{}, false
			})
			home := t.TempDir()
			env := append([]string{"HOME=" + home}, a.env(t, fake, home)...)
			h := acp.New(acp.Config{Name: "acp", Command: bin, Env: env})
			ctx := testCtx(t)
			rec := adaptertest.NewEvents()
			l, err := h.CreateSession(ctx, reqIn(t), rec.Sink)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close(ctx)
			from := len(fake.Requests())
			for _, p := range []string{"usage one", "usage two"} {
				if res, err := l.Prompt(ctx, text(p)); err != nil || res.StopReason != "end_turn" {
					t.Fatalf("Prompt(%q) = %+v, %v", p, res, err)
				}
			}
			var want fakemodel.Usage
			for _, r := range fake.Requests()[from:] {
				t.Logf("request %s %.60q reported %+v", r.API, r.LastUserText, r.Reported)
				want.InputTokens += r.Reported.InputTokens
				want.OutputTokens += r.Reported.OutputTokens
				want.CacheReadTokens += r.Reported.CacheReadTokens
				want.CacheWriteTokens += r.Reported.CacheWriteTokens
			}
			var got fakemodel.Usage
			n := 0
			for _, e := range rec.Entries() {
				if e.Kind != core.KindUsageReported {
					continue
				}
				u, ok := core.ParseUsage(e.Payload)
				if !ok {
					t.Fatalf("usage.reported payload unreadable: %s", e.Payload)
				}
				t.Logf("usage.reported %s", e.Payload)
				n++
				got.InputTokens += u.InputTokens
				got.OutputTokens += u.OutputTokens
				got.CacheReadTokens += u.CacheReadTokens
				got.CacheWriteTokens += u.CacheWriteTokens
				if u.Scope != "turn" || u.CostEstimated {
					t.Errorf("usage %s: want scope turn and no estimate", e.Payload)
				}
				if a.bin == "claude-agent-acp" && (u.CostUSD == nil || *u.CostUSD <= 0) {
					t.Errorf("usage %s: want Claude Code's own cost of the turn", e.Payload)
				}
			}
			if n != 2 || got != want {
				t.Fatalf("%d usage.reported entries summing %+v; the fake model reported %+v for the two turns", n, got, want)
			}
		})
	}
}
