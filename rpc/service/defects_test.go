package service_test

import (
	"context"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// TestAbandonedToolUnblocksCheckpoint (issue 16, defect a): a harness that
// dies mid-tool leaves a tool.started with no completion. When the process
// ends, its open tool calls are closed as abandoned, and the rebuild of the
// dead session's checkpoint is not refused for a tool "in flight".
func TestAbandonedToolUnblocksCheckpoint(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		r := newRig(t, rigOptions{open: open})
		s := r.create()
		if _, err := r.svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: s.ID, Content: []schema.Content{{Type: "text", Text: "say editing\ntoolstart Bash make test\ncrash 1"}}}); err == nil {
			t.Fatal("a crashing turn reported no error")
		}
		r.rec.Await(t, "the stopped status", func() bool {
			for _, e := range r.rec.Entries {
				if e.Kind == core.KindSessionStatus && payload(t, e)["status"] == "stopped" {
					return true
				}
			}
			return false
		})
		var started string
		abandoned := false
		for _, e := range r.branch(s.ID) {
			switch e.Kind {
			case core.KindToolStarted:
				started = payload(t, e)["toolId"].(string)
			case core.KindToolCompleted:
				p := payload(t, e)
				abandoned = p["toolId"] == started && p["abandoned"] == true
			}
		}
		if started == "" || !abandoned {
			t.Fatalf("tool %q: no tool.completed {abandoned: true} after the process ended: %v", started, kinds(r.branch(s.ID)))
		}
		out, err := r.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID, Reason: "before_shutdown"})
		if err != nil {
			t.Fatalf("checkpoint of the dead session: %v", err)
		}
		if out.Provenance != "reconstructed" {
			t.Fatalf("provenance %q, want reconstructed", out.Provenance)
		}
	})
}

// TestDeadProcessRebuildIgnoresToolInFlight: a record that already holds an
// unfinished tool call (written before abandoned calls were closed) does not
// stop the rebuild of a session whose process is not running.
func TestDeadProcessRebuildIgnoresToolInFlight(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		r := newRig(t, rigOptions{open: open})
		s := r.create()
		r.prompt(s.ID, "say working on it")
		r.svc.Close(ctx)
		if _, err := r.db.Append(ctx, s.ID, core.NewEntry{Kind: core.KindToolStarted,
			Payload: core.Payload(map[string]any{"toolId": "t-old", "name": "Bash"})}); err != nil {
			t.Fatal(err)
		}
		r2 := newRig(t, rigOptions{db: r.db})
		out, err := r2.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID, Reason: "manual"})
		if err != nil {
			t.Fatalf("rebuild with an old unfinished tool: %v", err)
		}
		if out.Provenance != "reconstructed" {
			t.Fatalf("provenance %q", out.Provenance)
		}
	})
}
