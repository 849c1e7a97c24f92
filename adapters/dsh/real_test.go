package dsh_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/dsh"
	"github.com/bridge-dev/bridge/adapters/dsh/dshtest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// startReal starts the fake model server and the real DeepSeek Harness web
// server (the pinned 0.1.0-rc.8 on Node 22, installed by .ci/run) against
// it. It never skips: a missing installation fails. BRIDGE_DSH_URL
// overrides the server (see dshtest.StartReal).
func startReal(t *testing.T) (*fakemodel.Server, *dshtest.Real) {
	t.Helper()
	model, err := fakemodel.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	return model, dshtest.StartReal(t, model.URL)
}

// realHost is an adapter for r, polling the history briskly.
func realHost(r *dshtest.Real) *dsh.Host {
	return dsh.New(dsh.Config{BaseURL: r.URL, PollInterval: 50 * time.Millisecond})
}

// TestRealDSH drives the real DeepSeek Harness through the adapter: the
// probe asks it, a turn, /compact (one context.compacted carrying DSH's
// shadowedTokenCount), goal create / pause / clear under DSH's revision
// rules, a restart of DSH and a native resume that continues the session,
// the session log imported, and a bogus resume refused with DSH's text.
func TestRealDSH(t *testing.T) {
	model, r := startReal(t)
	model.Responder(func(req fakemodel.Request) (fakemodel.Reply, bool) {
		switch {
		case strings.Contains(req.LastUserText, "Say hello after restart"):
			return fakemodel.Reply{Text: "Hello again, after the restart."}, true
		case strings.Contains(req.LastUserText, "Say hello"):
			return fakemodel.Reply{Text: "Hello from the fake model."}, true
		}
		return fakemodel.Reply{}, false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h := realHost(r)
	t.Logf("conformance target: %s", r.Program)

	p := h.Probe(ctx)
	if miss := p.Missing(core.RequiredCapabilities...); len(miss) > 0 {
		t.Fatalf("required capabilities missing on %s: %v\n%+v", r.URL, miss, p)
	}
	if p.Version == "" {
		t.Errorf("probe reports no version (host.describe): %+v", p)
	}

	cwd := t.TempDir()
	rec := adaptertest.NewEvents()
	live, err := h.CreateSession(ctx, core.CreateRequest{Cwd: cwd}, rec.Sink)
	if err != nil {
		t.Fatal(err)
	}
	id := live.NativeID()
	res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "Say hello"}})
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt: %+v %v\n%s", res, err, r.Logs())
	}
	if a := texts(t, rec.Entries(), core.KindAssistantMessage); len(a) != 1 || a[0] != "Hello from the fake model." {
		t.Fatalf("assistant text after the turn: %q", a)
	}
	if g := rec.Gauges(); len(g) == 0 || g[len(g)-1].Used <= 0 || g[len(g)-1].Size <= 0 {
		t.Errorf("no context gauge after the turn: %+v", g)
	}
	hist, err := h.History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, hist)

	// /compact: exactly one context.compacted, manual, with DSH's
	// shadowedTokenCount as the shadowed span's tokens and preTokens as
	// DSH's own gauge (its contextPressure projection) before it.
	gauge := rec.Gauges()[len(rec.Gauges())-1].Used
	before := len(rec.Entries())
	if _, err := live.(core.Compactor).Compact(ctx, ""); err != nil {
		t.Fatalf("Compact: %v\n%s", err, r.Logs())
	}
	cs := compacted(t, rec.Entries()[before:])
	if len(cs) != 1 || cs[0].Trigger != core.TriggerManual || cs[0].PreTokens == nil || *cs[0].PreTokens != gauge ||
		cs[0].ShadowedTokens == nil || cs[0].Summary == "" {
		t.Fatalf("context.compacted after /compact (gauge %d): %+v", gauge, cs)
	}
	var raw struct {
		Summary struct {
			ShadowedTokenCount int64 `json:"shadowedTokenCount"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(cs[0].Raw, &raw); err != nil || raw.Summary.ShadowedTokenCount != *cs[0].ShadowedTokens {
		t.Errorf("context.compacted raw %s: shadowedTokenCount %d, shadowedTokens %d", cs[0].Raw, raw.Summary.ShadowedTokenCount, *cs[0].ShadowedTokens)
	}
	summaries := 0
	for _, q := range model.Requests() {
		if q.IsSummaryRequest() {
			summaries++
		}
	}
	if summaries != 1 {
		t.Errorf("DSH sent %d compaction requests to the model, want 1", summaries)
	}

	// Goals, under DSH's own rules: a goal's revision moves on with each
	// phase change, not with its rounds. Create (revision 1) runs its one
	// round and blocks the goal (revision 2); a second create is refused;
	// a blocked goal cannot be paused; clear with the revision create
	// returned is stale, so the adapter re-reads it and retries once.
	goals := live.(core.GoalHost)
	gid, err := goals.CreateGoal(ctx, core.Goal{Text: "Write the word done", Rounds: 1})
	if err != nil {
		t.Fatalf("CreateGoal: %v", err)
	}
	if _, err := goals.CreateGoal(ctx, core.Goal{Text: "another"}); core.ErrorCode(err) != core.CodeConflict || !strings.Contains(err.Error(), "GOAL_ALREADY_EXISTS") {
		t.Errorf("second CreateGoal: %v, want a conflict naming GOAL_ALREADY_EXISTS", err)
	}
	waitGoal(t, ctx, h, id, gid, "block")
	if err := goals.PauseGoal(ctx, gid); core.ErrorCode(err) != core.CodeConflict || !strings.Contains(err.Error(), "GOAL_INVALID_TRANSITION") {
		t.Errorf("PauseGoal of a blocked goal: %v, want a conflict naming GOAL_INVALID_TRANSITION", err)
	}
	if err := live.(core.GoalClearer).ClearGoal(ctx, gid); err != nil {
		t.Fatalf("ClearGoal at a stale revision: %v", err)
	}
	waitGoal(t, ctx, h, id, gid, "clear")
	// A goal with rounds to spare is active; pause takes it at its
	// current revision.
	gid2, err := goals.CreateGoal(ctx, core.Goal{Text: "Keep writing the word twice", Rounds: 200})
	if err != nil || gid2 == gid {
		t.Fatalf("CreateGoal after clear: %q %v", gid2, err)
	}
	if err := goals.PauseGoal(ctx, gid2); err != nil {
		t.Fatalf("PauseGoal of an active goal: %v", err)
	}
	waitGoal(t, ctx, h, id, gid2, "pause")
	if err := live.(core.GoalClearer).ClearGoal(ctx, gid2); err != nil {
		t.Fatalf("ClearGoal of the paused goal: %v", err)
	}
	live.Close(ctx)

	// Restart DSH; the session resumes natively and continues.
	r.Restart()
	h = realHost(r)
	rec2 := adaptertest.NewEvents()
	live2, err := h.Resume(ctx, core.ResumeRequest{NativeID: id}, rec2.Sink)
	if err != nil {
		t.Fatalf("Resume after restart: %v\n%s", err, r.Logs())
	}
	if live2.NativeID() != id {
		t.Fatalf("resumed %q, want %q", live2.NativeID(), id)
	}
	res, err = live2.Prompt(ctx, []core.Content{{Type: "text", Text: "Say hello after restart"}})
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt after restart: %+v %v\n%s", res, err, r.Logs())
	}
	if a := texts(t, rec2.Entries(), core.KindAssistantMessage); len(a) != 1 || a[0] != "Hello again, after the restart." {
		t.Errorf("assistant text after the restart: %q (entries %d)", a, len(rec2.Entries()))
	}
	if cs := compacted(t, rec2.Entries()); len(cs) != 0 {
		t.Errorf("the resumed session re-reported an old compaction: %+v", cs)
	}
	live2.Close(ctx)

	_, err = h.Resume(ctx, core.ResumeRequest{NativeID: "session-00000000-0000-4000-8000-000000000000"}, nil)
	var re *core.ResumeError
	if !errors.As(err, &re) || re.NativeText == "" {
		t.Errorf("resume of a bogus id: %v", err)
	}
	if err := h.ArchiveSession(ctx, id); err != nil {
		t.Errorf("archive: %v", err)
	}

	// The durable log DSH wrote (flushed when it stops) imports with the
	// same turns and the one compaction.
	if r.Home != "" {
		r.Stop()
		is, err := h.Import(ctx, r.SessionLog(cwd, id), nil)
		if err != nil {
			t.Fatalf("Import: %v", err)
		}
		if is.NativeID != id || is.Cwd != cwd {
			t.Errorf("imported %q in %q, want %q in %q", is.NativeID, is.Cwd, id, cwd)
		}
		checkEntries(t, is.Entries)
		got := texts(t, is.Entries, core.KindAssistantMessage)
		if len(got) < 2 || got[0] != "Hello from the fake model." || got[len(got)-1] != "Hello again, after the restart." {
			t.Errorf("imported assistant texts %q", got)
		}
		users := texts(t, is.Entries, core.KindUserMessage)
		if len(users) < 2 || users[0] != "Say hello" || users[len(users)-1] != "Say hello after restart" {
			t.Errorf("imported user texts %q", users)
		}
		if cs := compacted(t, is.Entries); len(cs) != 1 || cs[0].Trigger != core.TriggerManual {
			t.Errorf("imported compactions: %+v", cs)
		}
	}

}

// waitGoal waits until the session's history holds a goal/change with
// operation op for goal gid.
func waitGoal(t *testing.T, ctx context.Context, h *dsh.Host, session, gid, op string) {
	t.Helper()
	for {
		hist, err := h.History(ctx, session)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range hist {
			var p struct {
				Type string `json:"type"`
				Data struct {
					Operation string `json:"operation"`
					Goal      *struct {
						ID string `json:"id"`
					} `json:"goal"`
					Cleared *struct {
						ID string `json:"id"`
					} `json:"cleared"`
				} `json:"data"`
			}
			if e.Kind != core.KindHarnessEvent || json.Unmarshal(e.Payload, &p) != nil || p.Type != "goal/change" || p.Data.Operation != op {
				continue
			}
			if (p.Data.Goal != nil && p.Data.Goal.ID == gid) || (p.Data.Cleared != nil && p.Data.Cleared.ID == gid) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no goal/change %s of %s: %v", op, gid, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestRealDSHConformance runs the shared suite against the real DeepSeek
// Harness, one server for the whole suite.
func TestRealDSHConformance(t *testing.T) {
	_, r := startReal(t)
	t.Logf("conformance target: %s", r.Program)
	adaptertest.Run(t, adaptertest.Harness{
		New:     func(t *testing.T) core.BridgeHost { return realHost(r) },
		Claims:  realClaims,
		Timeout: 3 * time.Minute,
	})
}

// realClaims is what the probe finds on DSH 0.1.0-rc.8: everything but
// session.historyWindow (not served) and a compaction focus. Unlike the
// fake server's replay, the real one serves session.fork.
var realClaims = append(append([]string(nil), claims...), core.CapSessionFork)
