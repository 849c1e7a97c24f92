package codex

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// e2eEnv is the real `codex` program pointed at a fake model server, with
// its own CODEX_HOME.
type e2eEnv struct {
	model *fakemodel.Server
	cfg   Config
	cwd   string
}

func newE2E(t testing.TB, extraArgs ...string) *e2eEnv {
	t.Helper()
	bin := adaptertest.FindBinary(t, "codex")
	srv, err := fakemodel.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(fakemodel.CodexConfig(srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	return &e2eEnv{model: srv, cwd: t.TempDir(), cfg: Config{
		Command: bin, Args: extraArgs, CodexHome: home, StateDir: t.TempDir(),
		Env: []string{"FAKE_API_KEY=sk-fake", "RUST_LOG=error", "NO_COLOR=1"},
	}}
}

func TestE2ETurnResumeAndManualCompaction(t *testing.T) {
	env := newE2E(t)
	ctx := ctxT(t)
	env.model.Enqueue(fakemodel.Reply{Text: "The answer is 42."})
	var c adaptertest.Events
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd, Title: "e2e"}, c.Sink)
	if err != nil {
		t.Fatal(err)
	}
	thread := l.NativeID()
	if thread == "" {
		t.Fatal("no thread id")
	}
	res, err := l.Prompt(ctx, text("What is the answer?"))
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	agents := c.OfKind(core.KindAssistantMessage)
	if len(agents) != 1 || payloadOf(t, agents[0])["text"] != "The answer is 42." {
		t.Fatalf("assistant messages = %v", agents)
	}
	if users := c.OfKind(core.KindUserMessage); len(users) != 0 {
		t.Fatalf("prompt echoed as user.message: %v", users)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done not closed after Close")
	}

	// A fresh Host instance resumes the stored thread natively.
	var c2 adaptertest.Events
	l2, err := New(env.cfg).Resume(ctx, core.ResumeRequest{CreateRequest: core.CreateRequest{Cwd: env.cwd}, NativeID: thread}, c2.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLive(t, l2)
	if l2.NativeID() != thread {
		t.Fatalf("resumed thread %q, want %q", l2.NativeID(), thread)
	}
	cr, err := l2.(core.Compactor).Compact(ctx, "keep the number 42")
	if err != nil {
		t.Fatal(err)
	}
	if cr.FocusApplied || cr.FocusNote == "" {
		t.Errorf("CompactResult = %+v", cr)
	}
	comps := c2.OfKind(core.KindContextCompacted)
	if len(comps) != 1 {
		t.Fatalf("want one context.compacted, got %d: %v", len(comps), c2.Entries())
	}
	cp := compactedOf(t, comps[0])
	if cp.Trigger != core.TriggerManual || !cp.Estimated || cp.NativeID == "" || cp.Harness != "codex" {
		t.Errorf("compacted = %+v", cp)
	}
	var sawSummary bool
	for _, r := range env.model.Requests() {
		sawSummary = sawSummary || r.IsSummaryRequest()
	}
	if !sawSummary {
		t.Error("codex never asked the model for a summary")
	}
	// The turn after compaction still works, and the token count Codex
	// reports next is recorded as the compacted context's size.
	if res, err := l2.Prompt(ctx, text("still there?")); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt after compaction = %+v, %v", res, err)
	}
	checkEntries(t, c2.Entries())
	var after []core.NewEntry
	compAt, afterAt := -1, -1
	for i, e := range c2.Entries() {
		if e.NativeID == comps[0].NativeID {
			compAt = i
		}
		if e.Kind == core.KindContextUsage {
			after = append(after, e)
			afterAt = i
		}
	}
	if len(after) != 1 || afterAt < compAt {
		t.Fatalf("context.usage entries after the compaction: %v (compaction at %d, usage at %d)", after, compAt, afterAt)
	}
	if p := payloadOf(t, after[0]); p["afterCompaction"] != cp.NativeID || p["used"].(float64) <= 0 {
		t.Errorf("context.usage after the compaction = %s", after[0].Payload)
	}

	// History reads the thread's rollout: the same native ids as live.
	hist, err := New(env.cfg).History(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, e := range hist {
		ids[e.NativeID] = true
	}
	if !ids[agents[0].NativeID] || !ids[comps[0].NativeID] {
		t.Errorf("history %v lacks live native ids %s / %s", hist, agents[0].NativeID, comps[0].NativeID)
	}
	sessions, err := New(env.cfg).ListSessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 1 || sessions[0].NativeID != thread || sessions[0].Title != "e2e" {
		t.Errorf("sessions = %+v", sessions)
	}
}

func TestE2EResumeUnknownThreadFails(t *testing.T) {
	env := newE2E(t)
	bogus := "019a0000-0000-7000-8000-000000000000"
	_, err := New(env.cfg).Resume(ctxT(t), core.ResumeRequest{NativeID: bogus}, nil)
	var re *core.ResumeError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want *core.ResumeError", err)
	}
	if re.NativeText != "no rollout found for thread id "+bogus {
		t.Errorf("NativeText = %q", re.NativeText)
	}
}

func TestE2EAutoCompaction(t *testing.T) {
	env := newE2E(t, "-c", "model_auto_compact_token_limit=1000")
	env.model.SetInputTokens(5000)
	ctx := ctxT(t)
	var c adaptertest.Events
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, c.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLive(t, l)
	for _, msg := range []string{"first", "second"} {
		if res, err := l.Prompt(ctx, text(msg)); err != nil || res.StopReason != "end_turn" {
			t.Fatalf("Prompt(%s) = %+v, %v", msg, res, err)
		}
	}
	comps := c.OfKind(core.KindContextCompacted)
	if len(comps) == 0 {
		t.Fatalf("no context.compacted; entries: %v", c.Entries())
	}
	for _, e := range comps {
		cp := compactedOf(t, e)
		if cp.Trigger != core.TriggerAuto || !cp.Estimated || cp.PreTokens == nil || *cp.PreTokens < 5000 {
			t.Errorf("compacted = %s", e.Payload)
		}
	}
	checkEntries(t, c.Entries())
}

func TestE2EProbe(t *testing.T) {
	env := newE2E(t)
	p := New(env.cfg).Probe(context.Background())
	if p.Binary == "" || !strings.HasPrefix(p.Version, "0.") {
		t.Fatalf("probe = %+v", p)
	}
	for _, name := range []string{core.CapSessionPrompt, core.CapNativeResume, core.CapCompactCommand, core.CapSessionRename,
		core.CapWorkspaceArchive, core.CapGoalCreate, core.CapGoalPause, core.CapSessionList} {
		if !p.Has(name) {
			t.Errorf("capability %s missing: %+v", name, p.Capabilities)
		}
	}
	if p.Has(core.CapCompactionFocus) {
		t.Error("compaction.focus claimed")
	}
	b, _ := json.Marshal(p)
	t.Logf("probe: %s", b)
}

func TestE2ECancelInterruptsTurn(t *testing.T) {
	env := newE2E(t)
	env.model.Enqueue(fakemodel.Reply{Hang: true})
	ctx := ctxT(t)
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLive(t, l)
	type result struct {
		res core.TurnResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := l.Prompt(ctx, text("take your time"))
		done <- result{res, err}
	}()
	if err := env.model.AwaitRequests(ctx, 1); err != nil {
		t.Fatal("the model was never called: ", err)
	}
	if err := l.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.res.StopReason != "cancelled" {
		t.Fatalf("Prompt after Cancel = %+v, %v", r.res, r.err)
	}
	// The session is still usable.
	env.model.Enqueue(fakemodel.Reply{Text: "back"})
	if res, err := l.Prompt(ctx, text("again")); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt after cancel = %+v, %v", res, err)
	}
}

func TestE2EModelErrorFailsTurn(t *testing.T) {
	env := newE2E(t)
	env.model.Responder(func(fakemodel.Request) (fakemodel.Reply, bool) {
		return fakemodel.Reply{Status: 400}, true
	})
	ctx := ctxT(t)
	var c adaptertest.Events
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, c.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLive(t, l)
	res, err := l.Prompt(ctx, text("hi"))
	if res.StopReason != "error" || core.ErrorCode(err) != core.CodeHarness {
		t.Fatalf("Prompt = %+v, %v; want stop reason error and a harness error", res, err)
	}
	if !strings.Contains(err.Error(), "scripted status 400") {
		t.Errorf("error lacks the provider's text: %v", err)
	}
	st := c.OfKind(core.KindSessionStatus)
	if len(st) == 0 || payloadOf(t, st[len(st)-1])["status"] != "error" {
		t.Errorf("session.status entries = %v", st)
	}
	checkEntries(t, c.Entries())
}
