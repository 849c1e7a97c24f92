package codex

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/core"
)

func payloadOf(t testing.TB, e core.NewEntry) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Payload, &m); err != nil {
		t.Fatalf("payload of %s: %v", e.Kind, err)
	}
	return m
}

func compactedOf(t testing.TB, e core.NewEntry) core.Compacted {
	t.Helper()
	var c core.Compacted
	if err := json.Unmarshal(e.Payload, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// checkEntries asserts every entry is valid and has a native id, unique.
func checkEntries(t testing.TB, es []core.NewEntry) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range es {
		if err := e.Validate(); err != nil {
			t.Errorf("invalid entry: %v", err)
		}
		if e.NativeID == "" {
			t.Errorf("entry %s has no NativeID: %s", e.Kind, e.Payload)
		}
		if seen[e.NativeID] {
			t.Errorf("NativeID %q used twice", e.NativeID)
		}
		seen[e.NativeID] = true
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func closeLive(t testing.TB, l core.Live) {
	t.Helper()
	if err := l.Close(context.Background()); err != nil {
		t.Errorf("close: %v", err)
	}
}

func text(s string) []core.Content { return []core.Content{{Type: "text", Text: s}} }

const recordedThread = "01a22a77-4374-7260-be16-6aa724b7bc90"

func TestReplayTurnAndManualCompaction(t *testing.T) {
	ctx := ctxT(t)
	h := fakeHost(t, "replay:"+testdata(t, "app-server-manual-compact-and-resume.recorded.jsonl")+":0")
	var c adaptertest.Events
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: "/home/user/project"}, c.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLive(t, l)
	if l.NativeID() != recordedThread {
		t.Fatalf("NativeID = %q", l.NativeID())
	}
	res, err := l.Prompt(ctx, text("hello"))
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	cr, err := l.(core.Compactor).Compact(ctx, "keep the numbers")
	if err != nil {
		t.Fatal(err)
	}
	if cr.FocusApplied || !strings.Contains(cr.FocusNote, "takes no focus") {
		t.Errorf("CompactResult = %+v", cr)
	}
	users, agents := c.OfKind(core.KindUserMessage), c.OfKind(core.KindAssistantMessage)
	if len(users) != 0 {
		t.Errorf("the prompt was echoed as user.message: %+v", users)
	}
	if len(agents) != 1 || payloadOf(t, agents[0])["text"] != "reply 1" || agents[0].NativeID != "msg_1" {
		t.Errorf("assistant messages = %+v", agents)
	}
	comps := c.OfKind(core.KindContextCompacted)
	if len(comps) != 1 {
		t.Fatalf("want exactly one context.compacted, got %d", len(comps))
	}
	cp := compactedOf(t, comps[0])
	if cp.Harness != "codex" || cp.Trigger != core.TriggerManual || !cp.Estimated ||
		cp.NativeID != "01a22a77-4563-76a2-9cfe-2bfe4bff70f1" || comps[0].NativeID != cp.NativeID {
		t.Errorf("compacted = %+v", cp)
	}
	t.Logf("compacted: %s", comps[0].Payload)
	if cp.PreTokens == nil || *cp.PreTokens != 1010 || cp.PostTokens == nil || *cp.PostTokens != 6046 {
		t.Errorf("tokens pre=%v post=%v, want 1010 and 6046", cp.PreTokens, cp.PostTokens)
	}
	if !strings.Contains(string(cp.Raw), `"contextCompaction"`) {
		t.Errorf("raw lacks the item: %s", cp.Raw)
	}
	// The model-metadata warning is kept; rate-limit pings are not recorded.
	var sawWarning bool
	for _, e := range c.OfKind(core.KindHarnessEvent) {
		p := payloadOf(t, e)
		if p["type"] == "warning" {
			sawWarning = true
		}
		if p["type"] == "account/rateLimits/updated" {
			t.Errorf("noise recorded: %s", e.Payload)
		}
	}
	if !sawWarning {
		t.Error("warning notification not kept as harness.event")
	}
	var gauges int
	for _, e := range c.All() {
		if e.Gauge != nil {
			gauges++
		}
	}
	if gauges == 0 {
		t.Error("no context gauge from thread/tokenUsage/updated")
	}
	checkEntries(t, c.Entries())
}

func TestReplayNativeResume(t *testing.T) {
	ctx := ctxT(t)
	h := fakeHost(t, "replay:"+testdata(t, "app-server-manual-compact-and-resume.recorded.jsonl")+":1")
	var c adaptertest.Events
	l, err := h.Resume(ctx, core.ResumeRequest{NativeID: recordedThread}, c.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLive(t, l)
	if l.NativeID() != recordedThread {
		t.Fatalf("NativeID = %q", l.NativeID())
	}
	var native string
	for _, e := range c.All() {
		if e.NativeSessionID != "" {
			native = e.NativeSessionID
		}
	}
	if native != recordedThread {
		t.Errorf("sink NativeSessionID = %q", native)
	}
	checkEntries(t, c.Entries())
}

func TestReplayAutoCompaction(t *testing.T) {
	ctx := ctxT(t)
	h := fakeHost(t, "replay:"+testdata(t, "app-server-auto-compact.recorded.jsonl")+":0")
	var c adaptertest.Events
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: "/home/user/project"}, c.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLive(t, l)
	for _, msg := range []string{"msg 0", "msg 1"} {
		if res, err := l.Prompt(ctx, text(msg)); err != nil || res.StopReason != "end_turn" {
			t.Fatalf("Prompt(%s) = %+v, %v", msg, res, err)
		}
	}
	es := c.Entries()
	var kinds []string
	for _, e := range es {
		if e.Kind != core.KindHarnessEvent {
			kinds = append(kinds, string(e.Kind))
		}
	}
	// The token count Codex reports after the compaction (the second
	// turn's) is recorded as context.usage.
	want := "assistant.message usage.reported context.compacted assistant.message context.usage usage.reported"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("kinds = %s\nwant    %s", got, want)
	}
	if us := c.OfKind(core.KindContextUsage); len(us) == 1 {
		if p := payloadOf(t, us[0]); p["afterCompaction"] != "01a22a77-d48c-7e53-86da-14a70615b8c5" || p["used"].(float64) <= 0 {
			t.Errorf("context.usage after the compaction = %s", us[0].Payload)
		}
	}
	comps := c.OfKind(core.KindContextCompacted)
	if len(comps) != 1 {
		t.Fatalf("want one context.compacted, got %d", len(comps))
	}
	cp := compactedOf(t, comps[0])
	if cp.Trigger != core.TriggerAuto || cp.NativeID != "01a22a77-d48c-7e53-86da-14a70615b8c5" || !cp.Estimated {
		t.Errorf("compacted = %+v", cp)
	}
	if cp.PreTokens == nil || *cp.PreTokens != 7010 || cp.PostTokens == nil || *cp.PostTokens != 6046 {
		t.Errorf("tokens pre=%v post=%v", cp.PreTokens, cp.PostTokens)
	}
	checkEntries(t, es)
}

func TestResumeErrorsCarryCodexText(t *testing.T) {
	for id, want := range map[string]string{
		"1": "no rollout found for thread id 019a0000-0000-7000-8000-000000000000",
		"2": "invalid session id: invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `n` at 1",
	} {
		h := fakeHost(t, "resume-error:"+id)
		_, err := h.Resume(ctxT(t), core.ResumeRequest{NativeID: "019a0000-0000-7000-8000-000000000000"}, nil)
		var re *core.ResumeError
		if !errors.As(err, &re) {
			t.Fatalf("id %s: err = %v, want *core.ResumeError", id, err)
		}
		if re.NativeText != want {
			t.Errorf("NativeText = %q\nwant %q", re.NativeText, want)
		}
	}
	// A resume that answers with another thread is not a native resume.
	h := fakeHost(t, "plain")
	_, err := h.Resume(ctxT(t), core.ResumeRequest{NativeID: recordedThread}, nil)
	var re *core.ResumeError
	if !errors.As(err, &re) || !strings.Contains(re.NativeText, "instead of") {
		t.Fatalf("mismatched id: err = %v", err)
	}
}

func TestProcessDeathReportsExit(t *testing.T) {
	ctx := ctxT(t)
	l, err := fakeHost(t, "crash").CreateSession(ctx, core.CreateRequest{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Prompt(ctx, text("hi"))
	if core.ErrorCode(err) != core.CodeHarness {
		t.Fatalf("Prompt err = %v, want harness error", err)
	}
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("Done never closed")
	}
	ex := l.Exit()
	if ex.Code != 3 || !strings.Contains(ex.StderrTail, "crashed on purpose") {
		t.Errorf("Exit = %+v", ex)
	}
	if !strings.Contains(err.Error(), "crashed on purpose") {
		t.Errorf("Prompt error does not carry stderr: %v", err)
	}
	_ = l.Close(ctx)
}

func TestApprovalsFollowPresetPolicy(t *testing.T) {
	// With no approver, the preset's policy answers.
	for policy, want := range map[string]string{"approve": "accept", "deny": "decline", "": "decline"} {
		ctx := ctxT(t)
		var c adaptertest.Events
		h := fakeHost(t, "approval")
		l, err := h.CreateSession(ctx, core.CreateRequest{Preset: core.Preset{Name: "p", ApprovalPolicy: policy}}, c.Sink)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Prompt(ctx, text("do it")); err != nil {
			t.Fatal(err)
		}
		closeLive(t, l)
		agents := c.OfKind(core.KindAssistantMessage)
		if len(agents) != 1 || payloadOf(t, agents[0])["text"] != "decision="+want {
			t.Errorf("policy %q: server saw %v", policy, agents)
		}
		checkEntries(t, c.Entries())
	}
}

func TestApprovalsAreRelayedToTheApprover(t *testing.T) {
	for kind, want := range map[core.ApprovalOptionKind]string{core.AllowOnce: "accept", core.AllowAlways: "acceptForSession",
		core.RejectOnce: "decline", core.RejectAlways: "decline"} {
		ctx := ctxT(t)
		var c adaptertest.Events
		var seen []core.ApprovalRequest
		approve := func(ctx context.Context, r core.ApprovalRequest) core.ApprovalDecision {
			seen = append(seen, r)
			return core.ApprovalDecision{OptionID: string(kind), Kind: kind, By: core.DecidedByUser}
		}
		l, err := fakeHost(t, "approval").CreateSession(ctx, core.CreateRequest{Approve: approve}, c.Sink)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Prompt(ctx, text("do it")); err != nil {
			t.Fatal(err)
		}
		closeLive(t, l)
		if len(seen) != 1 || seen[0].ID != "call_1" || seen[0].Kind != "execute" || seen[0].Title != "Run: rm -rf build" ||
			seen[0].Key != "command:rm -rf build" {
			t.Errorf("%s: approver saw %+v", kind, seen)
		}
		agents := c.OfKind(core.KindAssistantMessage)
		if len(agents) != 1 || payloadOf(t, agents[0])["text"] != "decision="+want {
			t.Errorf("%s: server saw %v", kind, agents)
		}
	}
}

func TestUnknownAndMalformedLinesAreKept(t *testing.T) {
	ctx := ctxT(t)
	var c adaptertest.Events
	l, err := fakeHost(t, "noise").CreateSession(ctx, core.CreateRequest{}, c.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLive(t, l)
	if res, err := l.Prompt(ctx, text("hi")); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	types := map[string]bool{}
	for _, e := range c.OfKind(core.KindHarnessEvent) {
		types[payloadOf(t, e)["type"].(string)] = true
	}
	if !types["codex/badLine"] || !types["brand/new/notification"] {
		t.Errorf("harness events = %v", types)
	}
	if len(c.OfKind(core.KindAssistantMessage)) != 1 {
		t.Error("turn did not continue after bad lines")
	}
	checkEntries(t, c.Entries())
}

func TestMissingBinaryIsUnavailable(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	h := New(Config{})
	_, err := h.CreateSession(ctxT(t), core.CreateRequest{}, nil)
	if core.ErrorCode(err) != core.CodeUnavailable || !strings.Contains(err.Error(), `"codex"`) {
		t.Fatalf("err = %v", err)
	}
	_, err = h.Resume(ctxT(t), core.ResumeRequest{NativeID: "x"}, nil)
	if core.ErrorCode(err) != core.CodeUnavailable {
		t.Fatalf("resume err = %v", err)
	}
	p := h.Probe(ctxT(t))
	if p.Binary != "" || len(p.Capabilities) == 0 || p.Has(core.CapSessionPrompt) {
		t.Errorf("probe = %+v", p)
	}
	if got := p.Missing(core.RequiredCapabilities...); len(got) != len(core.RequiredCapabilities) {
		t.Errorf("missing = %v", got)
	}
}

// TestCompactionWaitsForItsOwnTurn: a goal-continuation turn that reports
// turn/started after thread/compact/start was sent, and is then
// interrupted by the compaction, is not taken for the compaction turn:
// Compact sends one request, waits for the turn that carries the
// contextCompaction item, and records it as a manual compaction.
func TestCompactionWaitsForItsOwnTurn(t *testing.T) {
	ctx := ctxT(t)
	var c adaptertest.Events
	l, err := fakeHost(t, "compact-race").CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, c.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLive(t, l)
	if _, err := l.(core.Compactor).Compact(ctx, ""); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	comps := c.OfKind(core.KindContextCompacted)
	if len(comps) != 1 {
		t.Fatalf("want one context.compacted, got %d", len(comps))
	}
	if cp := compactedOf(t, comps[0]); cp.Trigger != core.TriggerManual || cp.NativeID != "cc-race" {
		t.Errorf("compacted = %s", comps[0].Payload)
	}
	checkEntries(t, c.Entries())
}

// TestCompactionTurnFailureIsReported: a compaction turn that fails without
// a contextCompaction item ends Compact with Codex's message.
func TestCompactionTurnFailureIsReported(t *testing.T) {
	ctx := ctxT(t)
	var c adaptertest.Events
	l, err := fakeHost(t, "compact-fail").CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, c.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLive(t, l)
	_, err = l.(core.Compactor).Compact(ctx, "")
	if err == nil || !strings.Contains(err.Error(), "fake: the compaction model call failed") {
		t.Fatalf("Compact = %v, want the turn's failure", err)
	}
	if comps := c.OfKind(core.KindContextCompacted); len(comps) != 0 {
		t.Errorf("a failed compaction was recorded: %v", comps)
	}
}
