package opencode

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// usageSum is the four token counts the ledger keeps.
type usageSum struct{ Input, Output, CacheRead, CacheWrite int64 }

// ledgerOf sums usage.reported entries by their native ids (each once),
// checking each payload reads back.
func ledgerOf(t *testing.T, es []core.NewEntry) (usageSum, map[string]core.Usage) {
	t.Helper()
	var s usageSum
	byID := map[string]core.Usage{}
	for _, e := range ofKind(es, core.KindUsageReported) {
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

// TestUsageLedgerRealOpenCode drives the real `opencode serve` against
// the fake model, which reports input, output and cached input tokens,
// with a price configured for the model in OpenCode: each model request
// of a turn (a text turn, and a tool turn of two requests) becomes one
// usage.reported entry, and together they equal exactly what the fake
// model reported for the session's requests (OpenCode's own title request
// is not part of the session), each with OpenCode's cost at that price.
// The same session read back from OpenCode (History: its stored messages,
// as `opencode export` has them; ImportAll: its database) gives the same
// entries under the same native ids, so an import after the live turns
// adds nothing, and the export file of `opencode export` does too.
func TestUsageLedgerRealOpenCode(t *testing.T) {
	bin := adaptertest.FindBinary(t, "opencode")
	model := startModel(t)
	home := t.TempDir()
	cwd := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()

	price := map[string]float64{"input": 2, "output": 8, "cache_read": 0.5, "cache_write": 1}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(fakeProviderConfig(model.URL)), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["provider"].(map[string]any)["fake"].(map[string]any)["models"].(map[string]any)["fake-model"].(map[string]any)["cost"] = price
	b, _ := json.Marshal(cfg)
	h := New(Config{Command: bin, Home: home, ConfigJSON: string(b), Env: offlineEnv, CopyDir: t.TempDir()})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		h.Close(ctx)
	})

	target := filepath.Join(cwd, "usage.txt")
	input, _ := json.Marshal(map[string]string{"filePath": target, "content": "usage\n"})
	isTitle := func(r fakemodel.Request) bool {
		return strings.Contains(strings.ToLower(string(r.Body)), "title generator")
	}
	model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		body := string(r.Body)
		switch {
		case isTitle(r):
			return fakemodel.Reply{Text: "A title", InputTokens: 77, OutputTokens: 3}, true
		case strings.Contains(r.LastUserText, "write the usage file") && !strings.Contains(body, `"role":"tool"`):
			return fakemodel.Reply{ToolCall: &fakemodel.ToolCall{ID: "call_usage", Name: "write", Input: input},
				InputTokens: 1500, OutputTokens: 30, CacheReadTokens: 700}, true
		case strings.Contains(r.LastUserText, "write the usage file"):
			return fakemodel.Reply{Text: "written", InputTokens: 1600, OutputTokens: 12, CacheReadTokens: 900}, true
		}
		return fakemodel.Reply{Text: "the answer is 42", InputTokens: 1300, OutputTokens: 25, CacheReadTokens: 400}, true
	})
	log := &sinkLog{}
	live, err := h.CreateSession(ctx, core.CreateRequest{Cwd: cwd, Title: "usage"}, log.sink)
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	for _, p := range []string{"what is the answer?", "please write the usage file"} {
		res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: p}})
		if err != nil || res.StopReason != "end_turn" {
			t.Fatalf("Prompt(%q) = %+v, %v", p, res, err)
		}
	}

	var want usageSum
	steps := 0
	for _, r := range model.Requests() {
		if isTitle(r) || r.API != "chat" {
			continue
		}
		steps++
		want.Input += r.Reported.InputTokens
		want.Output += r.Reported.OutputTokens
		want.CacheRead += r.Reported.CacheReadTokens
		want.CacheWrite += r.Reported.CacheWriteTokens
	}
	if steps != 3 || want.CacheRead == 0 {
		t.Fatalf("the fake model answered %d session requests reporting %+v: want 3, with cache reads", steps, want)
	}
	// The entry may arrive just after the turn's answer; wait for the
	// step-finish parts of all three requests.
	deadline := time.Now().Add(20 * time.Second)
	var got usageSum
	var live3 map[string]core.Usage
	for {
		got, live3 = ledgerOf(t, log.entries())
		if len(live3) >= steps || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(live3) != steps || got != want {
		t.Fatalf("live: %d usage.reported entries summing %+v; the fake model reported %+v over %d requests", len(live3), got, want, steps)
	}
	for id, u := range live3 {
		cost := (float64(u.InputTokens)*price["input"] + float64(u.OutputTokens)*price["output"] +
			float64(u.CacheReadTokens)*price["cache_read"] + float64(u.CacheWriteTokens)*price["cache_write"]) / 1e6
		if u.CostUSD == nil || math.Abs(*u.CostUSD-cost) > 1e-9 || u.CostEstimated || u.Model != "fake-model" || u.Scope != "response" {
			t.Errorf("usage %s = %+v (cost %v): want OpenCode's own cost %.6f of fake-model", id, u, u.CostUSD, cost)
		}
	}

	check := func(name string, es []core.NewEntry) {
		t.Helper()
		s, byID := ledgerOf(t, es)
		if s != want || len(byID) != len(live3) {
			t.Errorf("%s: %d usage entries summing %+v, want %d summing %+v", name, len(byID), s, len(live3), want)
		}
		for id, u := range byID {
			l, ok := live3[id]
			if !ok || l.InputTokens != u.InputTokens || l.OutputTokens != u.OutputTokens || l.CacheReadTokens != u.CacheReadTokens ||
				*l.CostUSD != *u.CostUSD {
				t.Errorf("%s: usage %s = %+v; live recorded %+v under that id", name, id, u, l)
			}
			if u.At == nil {
				t.Errorf("%s: usage %s has no time of its own", name, id)
			}
		}
	}
	hist, err := h.History(ctx, live.NativeID())
	if err != nil {
		t.Fatal(err)
	}
	check("History", hist)

	if err := live.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// `opencode export` of the session, imported: another OpenCode start,
	// with its own bound (one for the whole test timed out at load 20).
	ctx, cancel = context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "export", live.NativeID())
	cmd.Dir = cwd
	cmd.Env = append(append(os.Environ(), offlineEnv...), "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "OPENCODE_CONFIG_CONTENT="+string(b))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("opencode export: %v", err)
	}
	export := filepath.Join(t.TempDir(), "export.json")
	if err := os.WriteFile(export, out, 0o600); err != nil {
		t.Fatal(err)
	}
	is, err := h.Import(ctx, export, nil)
	if err != nil {
		t.Fatalf("import of `opencode export`: %v", err)
	}
	check("opencode export", is.Entries)

	// OpenCode's database.
	var db []core.NewEntry
	err = h.ImportAll(ctx, filepath.Join(h.dataDir(), databaseName), func(read core.ImportReader) error {
		var one []core.NewEntry
		is, err := read(func(part core.ImportedSession) error {
			one = append(one, part.Entries...)
			return nil
		})
		if is.NativeID == live.NativeID() {
			db = one
		}
		return err
	})
	if err != nil {
		t.Fatalf("ImportAll: %v", err)
	}
	check("database", db)
}
