package dsh_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// usageSum is the four token counts the ledger keeps.
type usageSum struct{ Input, Output, CacheRead, CacheWrite int64 }

// ledgerOf sums usage.reported entries, each native id once.
func ledgerOf(t *testing.T, es []core.NewEntry) (usageSum, map[string]core.Usage) {
	t.Helper()
	var s usageSum
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
			continue
		}
		byID[e.NativeID] = u
		s.Input += u.InputTokens
		s.Output += u.OutputTokens
		s.CacheRead += u.CacheReadTokens
		s.CacheWrite += u.CacheWriteTokens
	}
	return s, byID
}

// TestUsageLedgerRealDSH drives the real DeepSeek Harness against the fake
// model, which reports input, output and cached input tokens: each model
// request of the session's turns becomes one usage.reported entry (no
// cost: DSH gives none), and together they equal exactly what the fake
// model reported for them. The session log DSH wrote, imported, gives the
// same entries under the same native ids (an import after the live turns
// adds nothing), each at the time DSH recorded it.
func TestUsageLedgerRealDSH(t *testing.T) {
	model, r := startReal(t)
	if r.Home == "" {
		t.Fatal("TestUsageLedgerRealDSH reads the session log DSH writes: it needs the DSH it starts (BRIDGE_DSH_URL is set)")
	}
	replies := map[string]fakemodel.Reply{
		"Usage one": {Text: "first answer", InputTokens: 1500, OutputTokens: 20, CacheReadTokens: 300},
		"Usage two": {Text: "second answer", InputTokens: 2100, OutputTokens: 35, CacheReadTokens: 900},
	}
	model.Responder(func(req fakemodel.Request) (fakemodel.Reply, bool) {
		for k, v := range replies {
			if strings.HasPrefix(strings.TrimSpace(req.LastUserText), k) {
				return v, true
			}
		}
		return fakemodel.Reply{}, false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h := realHost(r)
	cwd := t.TempDir()
	rec := adaptertest.NewEvents()
	from := len(model.Requests())
	live, err := h.CreateSession(ctx, core.CreateRequest{Cwd: cwd}, rec.Sink)
	if err != nil {
		t.Fatal(err)
	}
	id := live.NativeID()
	for _, p := range []string{"Usage one, please", "Usage two, please"} {
		res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: p}})
		if err != nil || res.StopReason != "end_turn" {
			t.Fatalf("Prompt(%q): %+v %v\n%s", p, res, err, r.Logs())
		}
	}
	var want usageSum
	n := 0
	for _, q := range model.Requests()[from:] {
		ours := false // DSH's own title request is not part of the session
		for k := range replies {
			ours = ours || strings.HasPrefix(strings.TrimSpace(q.LastUserText), k)
		}
		if !ours {
			continue
		}
		n++
		want.Input += q.Reported.InputTokens
		want.Output += q.Reported.OutputTokens
		want.CacheRead += q.Reported.CacheReadTokens
		want.CacheWrite += q.Reported.CacheWriteTokens
	}
	if n != 2 || want.CacheRead == 0 {
		t.Fatalf("the fake model answered %d turn requests reporting %+v: want 2 with cache reads", n, want)
	}
	deadline := time.Now().Add(20 * time.Second)
	var got usageSum
	var liveIDs map[string]core.Usage
	for {
		got, liveIDs = ledgerOf(t, rec.Entries())
		if len(liveIDs) >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(liveIDs) != n || got != want {
		t.Fatalf("live: %d usage.reported entries summing %+v; the fake model reported %+v over %d requests", len(liveIDs), got, want, n)
	}
	for nid, u := range liveIDs {
		if u.CostUSD != nil || u.Model == "" || strings.Contains(u.Model, "/") || u.Scope != "response" || u.At == nil {
			t.Errorf("usage %s = %+v: want no cost, the bare model name, scope response and DSH's time", nid, u)
		}
	}
	if err := live.Close(ctx); err != nil {
		t.Fatal(err)
	}

	r.Stop()
	is, err := h.Import(ctx, r.SessionLog(cwd, id), nil)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	s, byID := ledgerOf(t, is.Entries)
	if s != want || len(byID) != n {
		t.Fatalf("imported log: %d usage entries summing %+v, want %d summing %+v", len(byID), s, n, want)
	}
	for nid, u := range byID {
		l, ok := liveIDs[nid]
		if !ok || l.InputTokens != u.InputTokens || l.OutputTokens != u.OutputTokens || l.CacheReadTokens != u.CacheReadTokens ||
			l.Model != u.Model || !l.At.Equal(*u.At) {
			t.Errorf("imported usage %s = %+v; live recorded %+v under that id", nid, u, l)
		}
	}
}
