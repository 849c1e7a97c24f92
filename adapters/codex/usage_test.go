package codex

import (
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// ledgerOf reads the usage.reported entries of es by native id, and their
// sum.
func ledgerOf(t *testing.T, es []core.NewEntry) (fakemodel.Usage, map[string]core.Usage) {
	t.Helper()
	var s fakemodel.Usage
	byID := map[string]core.Usage{}
	for _, e := range es {
		if e.Kind != core.KindUsageReported {
			continue
		}
		u, ok := core.ParseUsage(e.Payload)
		if !ok {
			t.Fatalf("usage.reported payload unreadable: %s", e.Payload)
		}
		if _, dup := byID[e.NativeID]; dup {
			t.Errorf("usage.reported %s twice", e.NativeID)
			continue
		}
		byID[e.NativeID] = u
		s.InputTokens += u.InputTokens
		s.OutputTokens += u.OutputTokens
		s.CacheReadTokens += u.CacheReadTokens
		s.CacheWriteTokens += u.CacheWriteTokens
	}
	return s, byID
}

// TestImportRolloutUsage: a recorded rollout's token_count events (the
// thread's running totals, repeated at times) give one usage.reported
// entry per turn, the growth of the totals over the turn, at the turn's
// end; together they are the thread's final totals, cached input counted
// apart from input.
func TestImportRolloutUsage(t *testing.T) {
	s, err := New(Config{}).Import(ctxT(t), testdata(t, "rollout-manual-compact.recorded.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, byID := ledgerOf(t, s.Entries)
	// The recording's last token_count: input 3000 (none cached), output
	// 20, over two turns (the second a manual compaction).
	if len(byID) != 2 || sum != (fakemodel.Usage{InputTokens: 3000, OutputTokens: 20}) {
		t.Fatalf("%d usage entries summing %+v; want 2 summing the rollout's totals (input 3000, output 20)", len(byID), sum)
	}
	for id, u := range byID {
		if id != "usage:"+u.TurnID || u.Scope != "turn" || u.Model == "" {
			t.Errorf("usage %s = %+v: want the turn's id, scope turn and the thread's model", id, u)
		}
	}
	for _, e := range s.Entries {
		if e.Kind == core.KindUsageReported && e.At.IsZero() {
			t.Errorf("usage %s has no time of its own", e.NativeID)
		}
	}
}

// TestE2EUsageLedgerAndRollout drives the real Codex app-server against
// the fake model, which reports input, output and cached input tokens:
// each turn's usage.reported entry, summed, equals what the fake model
// reported; the thread's rollout, read back (History, as `bridge import`
// reads it), gives the same entries under the same native ids, so an
// import after the live turns adds no usage twice.
func TestE2EUsageLedgerAndRollout(t *testing.T) {
	env := newE2E(t)
	ctx := ctxT(t)
	env.model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		return fakemodel.Reply{Text: "counted", InputTokens: 1700, OutputTokens: 25, CacheReadTokens: 650}, true
	})
	var c adaptertest.Events
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd, Title: "usage"}, c.Sink)
	if err != nil {
		t.Fatal(err)
	}
	thread := l.NativeID()
	for _, p := range []string{"first turn", "second turn"} {
		if res, err := l.Prompt(ctx, text(p)); err != nil || res.StopReason != "end_turn" {
			t.Fatalf("Prompt(%q) = %+v, %v", p, res, err)
		}
	}
	closeLive(t, l)
	var want fakemodel.Usage
	for _, r := range env.model.Requests() {
		want.InputTokens += r.Reported.InputTokens
		want.OutputTokens += r.Reported.OutputTokens
		want.CacheReadTokens += r.Reported.CacheReadTokens
		want.CacheWriteTokens += r.Reported.CacheWriteTokens
	}
	got, live := ledgerOf(t, c.Entries())
	if len(live) != 2 || got != want || want.CacheReadTokens == 0 {
		t.Fatalf("live: %d usage entries summing %+v; the fake model reported %+v", len(live), got, want)
	}
	hist, err := New(env.cfg).History(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	sum, byID := ledgerOf(t, hist)
	if sum != want || len(byID) != len(live) {
		t.Fatalf("rollout: %d usage entries summing %+v, want %d summing %+v", len(byID), sum, len(live), want)
	}
	for id, u := range byID {
		lu, ok := live[id]
		if !ok || lu.InputTokens != u.InputTokens || lu.OutputTokens != u.OutputTokens || lu.CacheReadTokens != u.CacheReadTokens ||
			lu.Model != u.Model {
			t.Errorf("rollout usage %s = %+v; live recorded %+v under that id", id, u, lu)
		}
	}
}
