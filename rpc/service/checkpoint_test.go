package service_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

const goodReply = "Here is the checkpoint you asked for.\n```json\n{\"summary\": \"Added the parser; tests pass.\", \"decisions\": [\"use a brace counter\", \"\"], \"filesTouched\": [\"src/parse.go\", \"src/parse.go\"], \"openWork\": [\"benchmark it\"]}\n```\nAnything else?"

func jsonStep(text string) fake.Step { return fake.Step{Op: fake.OpJSON, Text: text} }

// TestCheckpointCommit: the live session answers with JSON inside prose;
// the evidence gap is repaired; the commit writes checkpoint, boundary and
// marker (the new head), the head update and the audit row; the client is
// told "Checkpoint saved" (hot).
func TestCheckpointCommit(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		r := newRig(t, rigOptions{open: open, fake: fake.Options{Script: scriptFor(map[string][]fake.Step{
			"Bridge checkpoint request": {jsonStep(goodReply)},
		})}})
		s := r.create()
		r.prompt(s.ID, "decide keep the API small\nfile src/extra.go\nsay done")
		out, err := r.svc.SessionCheckpoint(context.Background(), schema.SessionCheckpointParams{SessionID: s.ID})
		if err != nil {
			t.Fatalf("Checkpoint: %v", err)
		}
		if out.Provenance != "agent+controller" || out.Reason != "manual" {
			t.Fatalf("outcome %+v, want provenance agent+controller, reason manual", out)
		}
		b := r.branch(s.ID)
		n := len(b)
		if got := kinds(b[n-3:]); strings.Join(got, ",") != "checkpoint,compaction,branch.summary" {
			t.Fatalf("branch ends with %v", got)
		}
		cp := payload(t, b[n-3])
		if cp["summary"] != "Added the parser; tests pass." || cp["schemaVersion"] != float64(1) || cp["sourceAgent"] != s.ID {
			t.Fatalf("checkpoint payload %v", cp)
		}
		dec, _ := json.Marshal(cp["decisions"])
		files, _ := json.Marshal(cp["filesTouched"])
		if string(dec) != `["use a brace counter","keep the API small"]` || string(files) != `["src/parse.go","src/extra.go"]` {
			t.Fatalf("decisions %s files %s: want the reply's (cleaned) plus the record's", dec, files)
		}
		sess, _ := r.db.GetSession(context.Background(), s.ID)
		if sess.HeadID != b[n-1].ID || sess.LatestCheckpointID != b[n-3].ID {
			t.Fatalf("head %s latest %s; want marker %s and checkpoint %s", sess.HeadID, sess.LatestCheckpointID, b[n-1].ID, b[n-3].ID)
		}
		first := cp["firstRetainedEntryId"].(string)
		found := false
		for _, e := range b {
			found = found || e.ID == first
		}
		if !found {
			t.Fatalf("firstRetainedEntryId %s is not on the active branch", first)
		}
		audit, err := r.db.Audit(context.Background(), s.ID, "checkpoint.evidence_verified")
		if err != nil || len(audit) != 1 || !strings.Contains(string(audit[0].Body), `"decisionCount":2`) {
			t.Fatalf("audit %v %v", audit, err)
		}
		if len(r.rec.Saved) != 1 || !r.rec.Saved[0].Hot || r.rec.Saved[0].EntryID != out.EntryID {
			t.Fatalf("checkpointSaved %+v", r.rec.Saved)
		}
		if len(r.rec.Compacts) != 0 {
			t.Fatal("a Bridge checkpoint must never be reported as a context compaction")
		}
		// Nothing new since the boundary: a second checkpoint is refused.
		if _, err := r.svc.SessionCheckpoint(context.Background(), schema.SessionCheckpointParams{SessionID: s.ID, Reason: "manual"}); core.ErrorCode(err) != core.CodeInvalid {
			t.Fatalf("second checkpoint with no new work: %v, want invalid", err)
		}
	})
}

func TestCheckpointRepairFailureTimeout(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		t.Run("repair", func(t *testing.T) {
			r := newRig(t, rigOptions{open: open})
			s := r.create()
			r.prompt(s.ID, "say working\nnext json I cannot write JSON, sorry.\nafter 2 json {\"summary\": \"repaired\"}")
			out, err := r.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID, Reason: "phase_boundary"})
			if err != nil {
				t.Fatalf("Checkpoint: %v", err)
			}
			var attempts []float64
			for _, e := range r.branch(s.ID) {
				if e.Kind == core.KindCompactionRequest {
					attempts = append(attempts, payload(t, e)["attempt"].(float64))
				}
			}
			if len(attempts) != 2 || attempts[0] != 0 || attempts[1] != 1 || out.Provenance != "agent" {
				t.Fatalf("requests %v, outcome %+v", attempts, out)
			}
		})
		t.Run("two bad replies", func(t *testing.T) {
			r := newRig(t, rigOptions{open: open})
			s := r.create()
			r.prompt(s.ID, "say working\nnext json no json here\nafter 2 json {\"summary\": \"\"}")
			_, err := r.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID, Reason: "manual"})
			if core.ErrorCode(err) != core.CodeSummary {
				t.Fatalf("err %v, want code summary", err)
			}
			b := r.branch(s.ID)
			if b[len(b)-1].Kind != core.KindCompactionFailed {
				t.Fatalf("branch ends with %s, want compaction.failed", b[len(b)-1].Kind)
			}
			audit, _ := r.db.Audit(ctx, s.ID, "compaction.failed")
			if len(audit) != 1 {
				t.Fatalf("compaction.failed audit rows: %d", len(audit))
			}
			// The failure closed the request: the lock is free again.
			r.prompt(s.ID, "say more work\nnext json {\"summary\": \"ok now\"}")
			if _, err := r.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID, Reason: "manual"}); err != nil {
				t.Fatalf("checkpoint after a failed one: %v", err)
			}
		})
		t.Run("timeout", func(t *testing.T) {
			r := newRig(t, rigOptions{open: open, timeout: 300 * time.Millisecond})
			s := r.create()
			r.prompt(s.ID, "say working\nnext hang")
			_, err := r.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID, Reason: "manual"})
			if core.ErrorCode(err) != core.CodeTimeout {
				t.Fatalf("err %v, want code timeout", err)
			}
			b := r.branch(s.ID)
			var req int
			for _, e := range b {
				if e.Kind == core.KindCompactionRequest {
					req++
				}
			}
			if req != 1 || b[len(b)-1].Kind != core.KindCompactionFailed {
				t.Fatalf("a reply that never comes gets no repair prompt and fails: %v", kinds(b))
			}
		})
	})
}

// TestCheckpointLockAcrossRestart: a request left open by this process is
// busy; one left by a process that died before a restart is stale.
func TestCheckpointLockAcrossRestart(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		r := newRig(t, rigOptions{open: open})
		s := r.create()
		r.prompt(s.ID, "say working")
		if _, err := r.db.Append(ctx, s.ID, core.NewEntry{Kind: core.KindCompactionRequest,
			Payload: core.Payload(map[string]any{"reason": "manual", "attempt": 0})}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID, Reason: "manual"}); core.ErrorCode(err) != core.CodeBusy {
			t.Fatalf("pending request of this process: %v, want busy", err)
		}
		if _, err := r.svc.SessionCompact(ctx, schema.SessionCompactParams{SessionID: s.ID}); core.ErrorCode(err) != core.CodeBusy {
			t.Fatalf("native compaction while a checkpoint is pending: %v, want busy", err)
		}
		r.svc.Close(ctx)
		time.Sleep(5 * time.Millisecond)
		// A new process on the same record: the old request is stale. The
		// session is not running there, so the checkpoint is reconstructed.
		r2 := newRig(t, rigOptions{db: r.db})
		out, err := r2.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID, Reason: "manual"})
		if err != nil {
			t.Fatalf("after restart: %v", err)
		}
		if out.Provenance != "reconstructed" {
			t.Fatalf("provenance %s, want reconstructed (the harness is not running)", out.Provenance)
		}
		cp := payload(t, r2.branch(s.ID)[len(r2.branch(s.ID))-3])
		if !strings.Contains(strings.Join(toStrings(cp["filesTouched"]), ","), "src/changed.go") {
			t.Fatalf("the recovery checkpoint must carry the repository's changed files: %v", cp["filesTouched"])
		}
		audit, _ := r2.db.Audit(ctx, s.ID, "compaction.recovery_worker.completed")
		if len(audit) != 1 || r2.rec.Saved[0].Hot {
			t.Fatalf("recovery audit %d rows, saved %+v", len(audit), r2.rec.Saved)
		}
	})
}

func toStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			out = append(out, x.(string))
		}
	}
	return out
}

// TestContextPressureController: an adapter with a gauge and no compaction
// of its own gets a context_pressure checkpoint at 75%; one that compacts
// itself never does.
func TestContextPressureController(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		t.Run("sole owner", func(t *testing.T) {
			r := newRig(t, rigOptions{open: open, timeout: 3 * time.Second, fake: fake.Options{Gauge: true, Window: 100000, Missing: []string{core.CapCompactCommand}}})
			s := r.create()
			r.prompt(s.ID, "say reading files\nusage 70000")
			time.Sleep(100 * time.Millisecond)
			if len(r.rec.Saved) != 0 {
				t.Fatal("70% must not fire")
			}
			r.prompt(s.ID, "say more\nusage 76000\nnext json {\"summary\": \"pressure checkpoint\"}")
			r.rec.Await(t, "a context_pressure checkpoint", func() bool { return len(r.rec.Saved) == 1 })
			if r.rec.Saved[0].Reason != "context_pressure" || !r.rec.Saved[0].Hot {
				t.Fatalf("saved %+v", r.rec.Saved[0])
			}
		})
		t.Run("harness owns its window", func(t *testing.T) {
			r := newRig(t, rigOptions{open: open, fake: fake.Options{Gauge: true, Window: 100000}})
			s := r.create()
			r.prompt(s.ID, "say reading\nusage 90000")
			time.Sleep(200 * time.Millisecond)
			if len(r.rec.Saved) != 0 {
				t.Fatalf("a harness with its own compaction must not get a pressure checkpoint: %+v", r.rec.Saved)
			}
			_ = ctx
		})
	})
}
