package claudecode

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

func TestProcessCrashMidTurn(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	var c collector
	l, err := New(fakeCommand(t, "crash")).CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, c.sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	_, err = l.Prompt(ctx, text("go"))
	if core.ErrorCode(err) != core.CodeHarness || !strings.Contains(err.Error(), "the fake harness hit a fatal bug") {
		t.Fatalf("Prompt error = %v, want a harness error with the stderr text", err)
	}
	<-l.Done()
	ex := l.Exit()
	if ex.Code != 3 || !strings.Contains(ex.StderrTail, "Error: the fake harness hit a fatal bug") {
		t.Errorf("exit = %+v", ex)
	}
	// What arrived before the crash is kept, the bad line as data.
	msgs := c.entries(core.KindAssistantMessage)
	if len(msgs) != 1 || payload(t, msgs[0])["text"] != "partial work" {
		t.Errorf("assistant entries %+v", msgs)
	}
	var bad int
	for _, e := range c.entries(core.KindHarnessEvent) {
		if p := payload(t, e); p["type"] == "malformed" && p["line"] == "this is not json" {
			bad++
		}
	}
	if bad != 1 {
		t.Errorf("malformed line kept %d times", bad)
	}
	// A dead session refuses further work with the exit reason.
	if _, err := l.Prompt(ctx, text("again")); core.ErrorCode(err) != core.CodeHarness {
		t.Errorf("Prompt after death: %v", err)
	}
	if err := l.Rename(ctx, "x"); core.ErrorCode(err) != core.CodeHarness {
		t.Errorf("Rename after death: %v", err)
	}
}

func TestControlRequestFromCLIIsAnswered(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	var c collector
	l, err := New(fakeCommand(t, "control")).CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, c.sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	res, err := l.Prompt(ctx, text("go"))
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	msgs := c.entries(core.KindAssistantMessage)
	if len(msgs) != 1 || !strings.Contains(payload(t, msgs[0])["text"].(string), `control request "hook_callback"`) {
		t.Errorf("the CLI did not get a clear refusal: %+v", msgs)
	}
	var types []string
	for _, e := range c.entries(core.KindHarnessEvent) {
		types = append(types, payload(t, e)["type"].(string))
	}
	if strings.Join(types, ",") != "control_request/hook_callback,brand_new_type/x" {
		t.Errorf("harness events %v", types)
	}
	checkNativeIDsUnique(t, c.entries(""))
}

func TestMissingBinary(t *testing.T) {
	t.Parallel()
	h := New(Config{Command: "claude-definitely-not-installed-here"})
	_, err := h.CreateSession(context.Background(), core.CreateRequest{Cwd: t.TempDir()}, nil)
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Code != core.CodeUnavailable ||
		!strings.Contains(ce.Message, `program "claude-definitely-not-installed-here" not found on PATH`) {
		t.Fatalf("err = %v", err)
	}
	p := h.Probe(context.Background())
	if p.Has(core.CapSessionCreate) || p.Has(core.CapNativeResume) || !p.Has(core.CapSessionList) {
		t.Errorf("probe without a binary: %+v", p)
	}
	_, err = h.Resume(context.Background(), core.ResumeRequest{NativeID: "x"}, nil)
	if core.ErrorCode(err) != core.CodeUnavailable {
		t.Errorf("resume without a binary: %v", err)
	}
}

func TestBadInputRefused(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	l, err := New(fakeCommand(t, "echo")).CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	if _, err := l.Prompt(ctx, []core.Content{{Type: "audio"}}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("unknown content type: %v", err)
	}
	if _, err := l.Prompt(ctx, nil); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("empty prompt: %v", err)
	}
	if _, err := New(fakeCommand(t, "echo")).CreateSession(ctx, core.CreateRequest{Cwd: "/no/such/dir"}, nil); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("bad cwd: %v", err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Prompt(ctx, text("after close")); err == nil {
		t.Error("Prompt after Close succeeded")
	}
}

func TestAbandonedTurnResultNotReused(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	var c collector
	l, err := New(fakeCommand(t, "slow")).CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, c.sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := l.Prompt(short, text("first")); core.ErrorCode(err) != core.CodeCancelled {
		t.Fatalf("abandoned Prompt: %v", err)
	}
	if _, err := l.Prompt(ctx, text("second")); err != nil {
		t.Fatal(err)
	}
	// The second Prompt returned on its own result, not the first turn's.
	if n := len(c.entries(core.KindSessionStatus)); n != 2 {
		t.Errorf("turn results seen when the second Prompt returned: %d, want 2", n)
	}
}

// TestProbeAsksTheCLI: the capabilities come from what the installed CLI
// says (its --help flags, its initialize response's slash commands), so an
// older CLI without --fork-session has no fork and one whose /compact takes
// no instructions applies no focus, whatever its version string.
func TestProbeAsksTheCLI(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	p := New(fakeCommand(t, "echo")).Probe(ctx)
	for _, c := range []string{core.CapSessionCreate, core.CapNativeResume, core.CapSessionFork, core.CapCompactCommand,
		core.CapCompactionFocus, core.CapApprovalRelay, core.CapSessionModels} {
		if !p.Has(c) {
			t.Errorf("current CLI: %s missing: %+v", c, p.Capabilities)
		}
	}
	old := New(fakeCommand(t, "echo", "CLAUDECODE_FAKE_OLD=1")).Probe(ctx)
	if old.Version != p.Version {
		t.Fatalf("versions %q and %q: the two must differ in what they offer only", old.Version, p.Version)
	}
	detail := func(name string) string {
		for _, c := range old.Capabilities {
			if c.Name == name {
				return c.Detail
			}
		}
		return ""
	}
	if old.Has(core.CapSessionFork) || !strings.Contains(detail(core.CapSessionFork), "lists no --fork-session") {
		t.Errorf("older CLI fork: %q", detail(core.CapSessionFork))
	}
	if old.Has(core.CapCompactionFocus) || !old.Has(core.CapCompactCommand) || !strings.Contains(detail(core.CapCompactionFocus), "takes no input") {
		t.Errorf("older CLI compact %v, focus %q", old.Has(core.CapCompactCommand), detail(core.CapCompactionFocus))
	}
	if !old.Has(core.CapNativeResume) {
		t.Error("older CLI still resumes")
	}
}
