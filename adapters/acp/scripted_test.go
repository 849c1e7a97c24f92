package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/acp"
	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/core"
)

// warm runs one session on h so that the host has learned what the agent
// shows only inside a session (commands, models, usage).
func warm(t *testing.T, h *acp.Host) {
	t.Helper()
	ctx := testCtx(t)
	l, err := h.CreateSession(ctx, reqIn(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Prompt(ctx, text("say warm")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

var scriptedClaims = []string{core.CapSessionList, core.CapSessionCreate, core.CapSessionHistory,
	core.CapSessionModels, core.CapSessionSelect, core.CapSessionPrompt, core.CapSessionCancel,
	core.CapPresetList, core.CapNativeResume, core.CapContextGauge, core.CapApprovalRelay}

// permissionTurn makes the script agent ask session/request_permission.
func permissionTurn(t *testing.T) []core.Content { return text("permission") }

func TestConformanceScriptedAgent(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost {
			h := scriptHost(t, "")
			warm(t, h)
			return h
		},
		Claims:   scriptedClaims,
		Approval: permissionTurn,
		Timeout:  time.Minute,
	})
}

func TestConformanceScriptedAgentWithCompaction(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost {
			h := scriptHost(t, "", "SCRIPTAGENT_COMPACT=1")
			warm(t, h)
			return h
		},
		Claims:   append([]string{core.CapCompactCommand, core.CapCompactionFocus}, scriptedClaims...),
		Approval: permissionTurn,
		Timeout:  time.Minute,
	})
}

// TestProbeBeforeAnySession: a fresh host knows the program and the
// initialize result, and says that what only a session shows is not known.
func TestProbeBeforeAnySession(t *testing.T) {
	p := scriptHost(t, "").Probe(testCtx(t))
	if p.Version != "1.0.0" || !p.Has(core.CapNativeResume) || !p.Has(core.CapSessionList) {
		t.Fatalf("probe %+v", p)
	}
	for _, c := range p.Capabilities {
		if c.Name == core.CapCompactCommand || c.Name == core.CapContextGauge {
			if c.Available || !strings.Contains(c.Detail, "no session") {
				t.Errorf("%s before any session: %+v", c.Name, c)
			}
		}
	}
}

func TestMissingProgram(t *testing.T) {
	h := acp.New(acp.Config{Command: "/nonexistent/acp-agent-xyz"})
	_, err := h.CreateSession(testCtx(t), reqIn(t), nil)
	if core.ErrorCode(err) != core.CodeUnavailable || !strings.Contains(err.Error(), "/nonexistent/acp-agent-xyz") {
		t.Fatalf("CreateSession with a missing program: %v (code %s)", err, core.ErrorCode(err))
	}
	p := h.Probe(testCtx(t))
	for _, c := range p.Capabilities {
		if c.Available || !strings.Contains(c.Detail, "/nonexistent/acp-agent-xyz") {
			t.Errorf("capability %+v with the program missing", c)
		}
	}
}

// TestPermissionPolicy: with no approver, the preset's ApprovalPolicy
// answers the agent's session/request_permission with one of its options.
func TestPermissionPolicy(t *testing.T) {
	for _, tc := range []struct {
		preset core.Preset
		option string
	}{
		{core.Preset{Name: "trusting", ApprovalPolicy: "approve"}, `"optionId":"allow"`},
		{core.Preset{Name: "careful"}, `"optionId":"deny"`},
	} {
		t.Run(tc.preset.Name, func(t *testing.T) {
			ctx := testCtx(t)
			rec := adaptertest.NewEvents()
			l, err := scriptHost(t, "").CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir(), Preset: tc.preset}, rec.Sink)
			if err != nil {
				t.Fatal(err)
			}
			closeLive(t, l)
			if _, err := l.Prompt(ctx, text("permission")); err != nil {
				t.Fatal(err)
			}
			if got := assistantText(t, rec.Entries()); !strings.Contains(got, tc.option) {
				t.Errorf("the agent was told %q, want %s", got, tc.option)
			}
		})
	}
}

// TestPermissionRelayed: the agent's request goes to the approver with its
// own options, and the approver's choice (or a cancelled turn) is the
// agent's answer.
func TestPermissionRelayed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		decision core.ApprovalDecision
		told     string
	}{
		{"allow", core.ApprovalDecision{OptionID: "allow", Kind: core.AllowOnce, By: core.DecidedByUser}, `"optionId":"allow"`},
		{"reject", core.ApprovalDecision{OptionID: "deny", Kind: core.RejectOnce, By: core.DecidedByUser}, `"optionId":"deny"`},
		{"cancelled", core.ApprovalDecision{OptionID: "deny", Kind: core.RejectOnce, By: core.DecidedByPolicy, Cancelled: true}, `"outcome":"cancelled"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			rec := adaptertest.NewEvents()
			var seen []core.ApprovalRequest
			approve := func(ctx context.Context, r core.ApprovalRequest) core.ApprovalDecision {
				seen = append(seen, r)
				return tc.decision
			}
			l, err := scriptHost(t, "").CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir(), Approve: approve}, rec.Sink)
			if err != nil {
				t.Fatal(err)
			}
			closeLive(t, l)
			if _, err := l.Prompt(ctx, text("permission")); err != nil {
				t.Fatal(err)
			}
			if len(seen) != 1 || len(seen[0].Options) < 2 || seen[0].Options[0].ID == "" || seen[0].ToolCallID == "" {
				t.Fatalf("approver saw %+v", seen)
			}
			if got := assistantText(t, rec.Entries()); !strings.Contains(got, tc.told) {
				t.Errorf("the agent was told %q, want %s", got, tc.told)
			}
		})
	}
}

// TestToolsUnknownUpdatesAndGarbage: tool calls map to tool entries; an
// unknown update and a line that is not JSON-RPC are kept as harness.event
// and the turn still ends normally.
func TestToolsUnknownUpdatesAndGarbage(t *testing.T) {
	ctx := testCtx(t)
	rec := adaptertest.NewEvents()
	l, err := scriptHost(t, "").CreateSession(ctx, reqIn(t), rec.Sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	res, err := l.Prompt(ctx, text("tool Read\nupdate {\"sessionUpdate\":\"mystery_update\",\"n\":7}\ngarbage\nsay done"))
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("prompt: %v %+v", err, res)
	}
	es := rec.Entries()
	st, done := ofKind(es, core.KindToolStarted), ofKind(es, core.KindToolCompleted)
	if len(st) != 1 || len(done) != 1 || field(t, st[0], "toolId") != field(t, done[0], "toolId") {
		t.Fatalf("tool entries: %d started, %d completed", len(st), len(done))
	}
	types := map[any]bool{}
	for _, e := range ofKind(es, core.KindHarnessEvent) {
		types[field(t, e, "type")] = true
	}
	if !types["mystery_update"] || !types["malformed_line"] {
		t.Errorf("harness events %v; want mystery_update and malformed_line", types)
	}
	if assistantText(t, es) != "done" {
		t.Errorf("assistant text %q", assistantText(t, es))
	}
}

// TestAgentCrash: a dying agent fails the turn, closes Done and reports its
// exit code and stderr.
func TestAgentCrash(t *testing.T) {
	ctx := testCtx(t)
	l, err := scriptHost(t, "").CreateSession(ctx, reqIn(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	if _, err := l.Prompt(ctx, text("crash")); err == nil {
		t.Fatal("a turn whose agent died succeeded")
	}
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("Done never closed")
	}
	x := l.Exit()
	if x.Code != 3 || !strings.Contains(x.StderrTail, "crashing on request") {
		t.Fatalf("exit %+v", x)
	}
	if _, err := l.Prompt(ctx, text("hello")); err == nil {
		t.Error("a prompt to a dead agent succeeded")
	}
}

// TestCancel: session/cancel ends a running turn with stopReason cancelled.
func TestCancel(t *testing.T) {
	ctx := testCtx(t)
	rec := adaptertest.NewEvents()
	l, err := scriptHost(t, "").CreateSession(ctx, reqIn(t), rec.Sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	type out struct {
		res core.TurnResult
		err error
	}
	ch := make(chan out, 1)
	go func() {
		r, err := l.Prompt(ctx, text("tool Wait\nhang"))
		ch <- out{r, err}
	}()
	for len(ofKind(rec.Entries(), core.KindToolCompleted)) == 0 { // the turn is running
		select {
		case <-ctx.Done():
			t.Fatal("the turn never started")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := l.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	o := <-ch
	if o.err != nil || o.res.StopReason != "cancelled" {
		t.Fatalf("cancelled turn: %+v %v", o.res, o.err)
	}
}

// TestCompactCommand: with a compact command advertised, Compact sends
// "/compact <focus>" and the agent's compaction_update becomes exactly one
// context.compacted with the usage readings before and after it.
func TestCompactCommand(t *testing.T) {
	ctx := testCtx(t)
	rec := adaptertest.NewEvents()
	h := scriptHost(t, "", "SCRIPTAGENT_COMPACT=1")
	l, err := h.CreateSession(ctx, reqIn(t), rec.Sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	if _, err := l.Prompt(ctx, text("usage 40000")); err != nil {
		t.Fatal(err)
	}
	res, err := l.(core.Compactor).Compact(ctx, "keep the file names")
	if err != nil || !res.FocusApplied {
		t.Fatalf("Compact: %+v %v", res, err)
	}
	cs := ofKind(rec.Entries(), core.KindContextCompacted)
	if len(cs) != 1 {
		t.Fatalf("%d context.compacted entries, want 1", len(cs))
	}
	var c core.Compacted
	if err := json.Unmarshal(cs[0].Payload, &c); err != nil {
		t.Fatal(err)
	}
	if c.Harness != "acp" || c.Trigger != core.TriggerUnknown || c.PreTokens == nil || *c.PreTokens != 40000 ||
		c.PostTokens == nil || *c.PostTokens != 10050 || !strings.Contains(c.Summary, "keep the file names") {
		t.Errorf("compacted %+v", c)
	}
	if !h.Probe(ctx).Has(core.CapCompactCommand) || !h.Probe(ctx).Has(core.CapCompactionFocus) {
		t.Error("compaction.command/focus not reported after the agent advertised compact with input")
	}

	// Without the command, Compact is refused as unsupported.
	l2, err := scriptHost(t, "").CreateSession(ctx, reqIn(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l2)
	if _, err := l2.Prompt(ctx, text("hi")); err != nil {
		t.Fatal(err)
	}
	if _, err := l2.(core.Compactor).Compact(ctx, ""); !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("Compact without a compact command: %v", err)
	}
}

// TestSelectModelListAndHistory: models come from the session, selection
// goes through session/set_model, the agent's session list and a load
// replay are read in temporary processes.
func TestSelectModelListAndHistory(t *testing.T) {
	ctx := testCtx(t)
	rec := adaptertest.NewEvents()
	h := scriptHost(t, "")
	cwd := t.TempDir()
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: cwd, Model: "scripted-large"}, rec.Sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	var models []string
	for _, ev := range rec.All() {
		if ev.Model != "" {
			models = append(models, ev.Model)
		}
	}
	if len(models) == 0 || models[len(models)-1] != "scripted-large" {
		t.Errorf("model events %v", models)
	}
	if _, err := l.Prompt(ctx, text("say answer one")); err != nil {
		t.Fatal(err)
	}
	list, err := h.ListSessions(ctx, cwd)
	if err != nil || len(list) != 1 || list[0].NativeID != l.NativeID() {
		t.Fatalf("ListSessions: %+v %v", list, err)
	}
	hist, err := h.History(ctx, l.NativeID())
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || hist[0].Kind != core.KindUserMessage || hist[1].Kind != core.KindAssistantMessage ||
		field(t, hist[1], "text") != "answer one" {
		t.Fatalf("history %+v", hist)
	}
	if _, err := h.History(ctx, "sa-unknown"); err == nil {
		t.Error("History of an unknown session succeeded")
	}
	if err := l.SelectModel(ctx, "", "high"); !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("effort selection: %v", err)
	}
}

// TestPresetMode: a preset's PermissionMode selects an offered session mode
// with session/set_mode; a mode the agent does not offer is refused by name
// before any session is kept.
func TestPresetMode(t *testing.T) {
	ctx := testCtx(t)
	rec := adaptertest.NewEvents()
	h := scriptHost(t, "")
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir(), Preset: core.Preset{Name: "planner", PermissionMode: "plan"}}, rec.Sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	if _, err := l.Prompt(ctx, text("hi")); err != nil {
		t.Fatal(err)
	}
	modeSeen := false
	for _, e := range ofKind(rec.Entries(), core.KindHarnessEvent) {
		if field(t, e, "type") == "current_mode_update" {
			modeSeen = true
		}
	}
	if !modeSeen {
		t.Error("the agent never reported the mode switch")
	}
	_, err = h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir(), Preset: core.Preset{Name: "x", PermissionMode: "yolo"}}, nil)
	if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), `"yolo"`) {
		t.Errorf("unknown mode: %v", err)
	}
}

// TestConformanceScriptedAgentWithFork: the scripted agent advertising the
// unstable session/fork, so the suite's fork case runs against a side
// process.
func TestConformanceScriptedAgentWithFork(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost {
			h := scriptHost(t, "", "SCRIPTAGENT_FORK=1")
			warm(t, h)
			return h
		},
		Claims:   append([]string{core.CapSessionFork}, scriptedClaims...),
		Approval: permissionTurn,
		Timeout:  time.Minute,
	})
}
