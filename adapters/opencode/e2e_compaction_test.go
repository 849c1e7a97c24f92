package opencode

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// TestAutoCompaction drives the real `opencode serve` into its own
// automatic compaction: the fake model reports a usage that overflows the
// model's configured context (limit.context 100,000, output 4,096), so
// OpenCode compacts by itself after the turn. The turn reports a context
// gauge from the step's token usage against that limit, and the compaction
// reaches the sink as exactly one context.compacted with trigger auto,
// carrying the summary OpenCode asked the model for.
func TestAutoCompaction(t *testing.T) {
	bin := adaptertest.FindBinary(t, "opencode")
	model := startModel(t)
	model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		body := strings.ToLower(string(r.Body))
		switch {
		case strings.Contains(body, "title generator"):
			return fakemodel.Reply{Text: "A title"}, true
		case r.IsSummaryRequest():
			return fakemodel.Reply{Text: "AUTO-SUMMARY: the user filled the context; nothing else happened.", InputTokens: 900}, true
		case strings.Contains(r.LastUserText, "fill the context"):
			return fakemodel.Reply{Text: "That was a lot of context.", InputTokens: 99000}, true
		}
		return fakemodel.Reply{Text: "OK", InputTokens: 1000}, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	h := realHost(t, bin, t.TempDir(), model)
	var mu = make(chan struct{}, 1)
	var gauges []core.Gauge
	log := &sinkLog{}
	sink := func(e core.Event) {
		if e.Gauge != nil {
			mu <- struct{}{}
			gauges = append(gauges, *e.Gauge)
			<-mu
		}
		log.sink(e)
	}
	live, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, sink)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close(ctx)
	if res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "fill the context"}}); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	// OpenCode compacts after the turn's step; wait for its record.
	var cs []core.NewEntry
	for {
		cs = ofKind(log.entries(), core.KindContextCompacted)
		if len(cs) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no context.compacted after an overflowing turn; entries %v", kinds(log.entries()))
		case <-time.After(100 * time.Millisecond):
		}
	}
	// A later turn must not report the same compaction again.
	if _, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "and now?"}}); err != nil {
		t.Fatal(err)
	}
	cs = ofKind(log.entries(), core.KindContextCompacted)
	if len(cs) != 1 {
		t.Fatalf("%d context.compacted entries, want exactly 1", len(cs))
	}
	var c core.Compacted
	if err := json.Unmarshal(cs[0].Payload, &c); err != nil {
		t.Fatal(err)
	}
	if c.Trigger != core.TriggerAuto || c.Harness != "opencode" || !strings.Contains(c.Summary, "AUTO-SUMMARY") {
		t.Errorf("context.compacted = %+v, want opencode, trigger auto, the model's summary", c)
	}
	mu <- struct{}{}
	got := append([]core.Gauge(nil), gauges...)
	<-mu
	overflow := false
	for _, g := range got {
		if g.Size != 100000 {
			t.Errorf("gauge %+v: size is the model's limit.context 100000", g)
		}
		overflow = overflow || g.Used >= 99000
	}
	if !overflow {
		t.Errorf("gauges %+v: none reports the overflowing step's usage", got)
	}
	n := 0
	for _, r := range model.Requests() {
		if r.IsSummaryRequest() {
			n++
		}
	}
	if n != 1 {
		t.Errorf("OpenCode asked the model for %d summaries, want 1", n)
	}
}
