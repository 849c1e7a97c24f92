package acp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/rpc/service/servicetest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// TestContextPressureThroughService: the scripted agent reports a context
// gauge (usage_update) and has no compaction of its own, so Bridge owns its
// window: at 70% nothing fires, at 76% a context_pressure checkpoint is
// written (the agent answers the checkpoint request with a JSON object) and
// announced as session/checkpointSaved, hot.
func TestContextPressureThroughService(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	host := scriptHost(t, "", "SCRIPTAGENT_WINDOW=100000")
	db := storagetest.Open(t)
	n := servicetest.NewRecorder()
	svc, err := service.New(service.Options{Store: db, Hosts: []core.BridgeHost{host}, Notifier: n,
		DataDir: t.TempDir(), CheckpointTimeout: 30 * time.Second,
		// This agent cannot fork: the agent-written checkpoint is asked in
		// the live thread, as the preset says.
		Presets: []core.Preset{{Name: "in-thread", Harness: "acp", Checkpoint: core.CheckpointInThread}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })

	sess, err := svc.SessionCreate(ctx, schema.SessionCreateParams{Harness: "acp", Cwd: t.TempDir(), Title: "pressure", Preset: "in-thread"})
	if err != nil {
		t.Fatal(err)
	}
	prompt := func(s string) {
		t.Helper()
		if _, err := svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: sess.SessionID, Content: []schema.Content{{Type: "text", Text: s}}}); err != nil {
			t.Fatalf("prompt %q: %v", s, err)
		}
	}
	prompt("say I read the files\nusage 70000")
	p := host.Probe(ctx)
	if !p.Has(core.CapContextGauge) || p.Has(core.CapCompactCommand) {
		t.Fatalf("after a turn with usage_update: gauge %v, compact command %v", p.Has(core.CapContextGauge), p.Has(core.CapCompactCommand))
	}
	// A second turn still at 70% queues behind any checkpoint the first
	// reading had (wrongly) fired, so such a checkpoint would show by now.
	prompt("say still reading\nusage 70000")
	branch, err := db.ActiveBranch(ctx, sess.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range branch {
		if e.Kind == core.KindCompactionRequest || e.Kind == core.KindCheckpoint {
			t.Fatalf("at 70%% of the window a %s entry was written", e.Kind)
		}
	}
	if len(n.Saved) != 0 {
		t.Fatalf("at 70%% a checkpoint was saved: %+v", n.Saved)
	}

	prompt("say I changed more files\nusage 76000")
	n.Await(t, "a checkpoint at 76%", func() bool { return len(n.Saved) > 0 })
	saved := n.Saved
	if len(saved) != 1 || saved[0].Reason != "context_pressure" || !saved[0].Hot || saved[0].SessionID != sess.SessionID {
		t.Fatalf("saved %+v", saved)
	}
	branch, err = db.ActiveBranch(ctx, sess.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range branch {
		if e.ID != saved[0].EntryID && e.Kind != core.KindCheckpoint {
			continue
		}
		var cp struct {
			Summary      string `json:"summary"`
			Reason       string `json:"reason"`
			TokensBefore int64  `json:"tokensBefore"`
		}
		if err := json.Unmarshal(e.Payload, &cp); err != nil {
			t.Fatal(err)
		}
		if e.Kind == core.KindCheckpoint {
			found = true
			if !strings.Contains(cp.Summary, "scripted checkpoint") || cp.Reason != "context_pressure" || cp.TokensBefore != 76000 {
				t.Errorf("checkpoint payload %s", e.Payload)
			}
		}
	}
	if !found {
		t.Fatalf("no checkpoint entry on the active branch")
	}
}
