package acp_test

import (
	"testing"

	"github.com/bridge-dev/bridge/adapters/acp"
	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// TestRealAgentsGauge: the real claude-agent-acp and codex-acp report the
// context's usage over ACP (usage_update), which the adapter turns into a
// context gauge: the reading carries the fake model's reported input usage
// against the agent's window, and the probe then claims context.gauge.
// (claude-code-acp 0.16.2 reports no usage; none of the three reports a
// compaction over ACP: see the issue notes.)
func TestRealAgentsGauge(t *testing.T) {
	for _, a := range realACPAgents[1:] {
		a := a
		t.Run(a.bin, func(t *testing.T) {
			bin := adaptertest.FindBinary(t, a.bin)
			t.Logf("target: %s %s", a.pkg, npmVersion(t, a.pkg))
			fake, err := fakemodel.Start()
			if err != nil {
				t.Fatal(err)
			}
			defer fake.Close()
			fake.SetInputTokens(123456)
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
			if _, err := l.Prompt(ctx, text("hello")); err != nil {
				t.Fatal(err)
			}
			gs := rec.Gauges()
			if len(gs) == 0 {
				t.Fatalf("no context gauge from %s", a.bin)
			}
			g := gs[len(gs)-1]
			if g.Used < 123456 || g.Used > 130000 || g.Size <= g.Used {
				t.Errorf("gauge %+v: want the model's reported 123,456 input tokens (plus the answer) against a larger window", g)
			}
			if p := h.Probe(ctx); !p.Has(core.CapContextGauge) {
				t.Errorf("probe after a gauge reading does not claim context.gauge: %+v", p)
			}
			t.Logf("gauge %+v", g)
		})
	}
}
