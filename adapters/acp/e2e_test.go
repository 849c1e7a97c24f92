package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/adapters/acp"
	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// realAgent is an isolated setup for the real @zed-industries/claude-code-acp:
// a fake Anthropic server on 127.0.0.1, a scratch HOME and a project folder
// (dsh-acp-offline.md gives the environment).
type realAgent struct {
	fake *fakemodel.Server
	cfg  acp.Config
	cwd  string
}

func newRealAgent(t *testing.T) *realAgent {
	t.Helper()
	bin := adaptertest.FindBinary(t, "claude-code-acp")
	fake, err := fakemodel.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	root := t.TempDir()
	home, cwd := filepath.Join(root, "home"), filepath.Join(root, "project")
	for _, d := range []string{home, cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{
		"ANTHROPIC_BASE_URL=" + fake.URL,
		"ANTHROPIC_API_KEY=sk-ant-dummy-for-tests",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"HOME=" + home,
		// Claude Code refuses its permission bypass flag as root unless it is
		// told it runs in a sandbox (the test machine runs as root).
		"IS_SANDBOX=1",
	}
	return &realAgent{fake: fake, cwd: cwd, cfg: acp.Config{Name: "acp", Command: bin, Env: env, Cwd: cwd}}
}

// answer makes the fake model answer any turn whose last user text holds key.
func (r *realAgent) answer(key, reply string) {
	r.fake.Responder(func(req fakemodel.Request) (fakemodel.Reply, bool) {
		if strings.Contains(req.LastUserText, key) {
			return fakemodel.Reply{Text: reply}, true
		}
		return fakemodel.Reply{}, false
	})
}

func assistantText(t *testing.T, es []core.NewEntry) string {
	t.Helper()
	var b strings.Builder
	for _, e := range ofKind(es, core.KindAssistantMessage) {
		s, _ := field(t, e, "text").(string)
		b.WriteString(s)
	}
	return b.String()
}

// TestRealAgentSessionAndLoadAfterRestart drives the real claude-code-acp:
// a new session answers a prompt with the fake model's text; a fresh Host
// (a new agent process) loads the session natively under the same id and
// the next turn carries the earlier conversation; a bogus id fails with
// the agent's own error as a *core.ResumeError.
func TestRealAgentSessionAndLoadAfterRestart(t *testing.T) {
	r := newRealAgent(t)
	ctx := testCtx(t)
	h := acp.New(r.cfg)

	p := h.Probe(ctx)
	if p.Version != "0.16.2" || !p.Has(core.CapNativeResume) || !p.Has(core.CapSessionList) {
		t.Fatalf("probe of the real agent: version %q, native.resume %v, session.list %v: %+v", p.Version, p.Has(core.CapNativeResume), p.Has(core.CapSessionList), p)
	}

	rec := adaptertest.NewEvents()
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: r.cwd}, rec.Sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	r.answer("remember the word", "I will remember PAPAYA-7731.")
	res, err := l.Prompt(ctx, text("Please remember the word PAPAYA-7731."))
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" {
		t.Fatalf("stop reason %q", res.StopReason)
	}
	if got := assistantText(t, rec.Entries()); !strings.Contains(got, "I will remember PAPAYA-7731.") {
		t.Fatalf("assistant text %q; entries %+v", got, rec.Entries())
	}
	id := l.NativeID()
	if id == "" {
		t.Fatal("no native session id")
	}
	// claude-code-acp lists /compact but reports no compaction over ACP:
	// the probe must not claim it (TestRealAgentCompactRefused).
	if h.Probe(ctx).Has(core.CapCompactCommand) {
		t.Error("compaction.command is claimed, but the agent reports no compaction over ACP")
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done not closed after Close")
	}

	// History replays the stored session in a temporary process; the host
	// was configured with another working directory, so the session's own
	// is found through session/list.
	other := acp.New(acp.Config{Command: r.cfg.Command, Env: r.cfg.Env, Cwd: t.TempDir()})
	hist, err := other.History(ctx, id)
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if len(hist) < 2 || hist[0].Kind != core.KindUserMessage || !strings.Contains(assistantText(t, hist), "I will remember PAPAYA-7731.") {
		t.Errorf("history %v", kindsOf(hist))
	}

	// A fresh Host: nothing learned, a new agent process.
	h2 := acp.New(r.cfg)
	rec2 := adaptertest.NewEvents()
	l2, err := h2.Resume(ctx, core.ResumeRequest{CreateRequest: core.CreateRequest{Cwd: r.cwd}, NativeID: id}, rec2.Sink)
	if err != nil {
		t.Fatalf("native load after restart: %v", err)
	}
	closeLive(t, l2)
	if l2.NativeID() != id {
		t.Fatalf("loaded session id %q, want %q", l2.NativeID(), id)
	}
	if n := len(ofKind(rec2.Entries(), core.KindAssistantMessage)) + len(ofKind(rec2.Entries(), core.KindUserMessage)); n != 0 {
		t.Errorf("the load replay was recorded again: %d message entries", n)
	}
	r.answer("What was the word", "The word was PAPAYA-7731.")
	before := len(r.fake.Requests())
	if _, err := l2.Prompt(ctx, text("What was the word?")); err != nil {
		t.Fatal(err)
	}
	if got := assistantText(t, rec2.Entries()); !strings.Contains(got, "The word was PAPAYA-7731.") {
		t.Fatalf("assistant text after load %q", got)
	}
	carried := false
	for _, req := range r.fake.Requests()[before:] {
		if strings.Contains(string(req.Body), "PAPAYA-7731") && strings.Contains(req.LastUserText, "What was the word") {
			carried = true
		}
	}
	if !carried {
		t.Error("the turn after session/load did not carry the earlier conversation to the model")
	}

	_, err = h2.Resume(ctx, core.ResumeRequest{CreateRequest: core.CreateRequest{Cwd: r.cwd}, NativeID: "0b7c9d2e-1111-4222-8333-944455556666"}, adaptertest.NewEvents().Sink)
	var re *core.ResumeError
	if !errors.As(err, &re) || re.NativeText == "" {
		t.Fatalf("load of a bogus id: %v; want a *core.ResumeError with the agent's text", err)
	}
	t.Logf("agent's own error for a bogus id: %s", re.NativeText)
}

// TestRealAgentToolPermission: the real agent asks session/request_permission
// before writing a file (a tool call the default mode does not allow); the
// request reaches the session's approver with the agent's own options.
// "Allow once" writes the file and records the tool's result; "reject once"
// leaves the file unwritten and the model is told; with no approver the
// preset's policy rejects and the turn still ends.
func TestRealAgentToolPermission(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kind    core.ApprovalOptionKind // the option kind the approver picks; "" for no approver
		written bool
	}{
		{"allow_once", core.AllowOnce, true},
		{"reject_once", core.RejectOnce, false},
		{"no_approver", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRealAgent(t)
			ctx := testCtx(t)
			target := filepath.Join(r.cwd, "approved.txt")
			input := []byte(`{"file_path":` + strconvQuote(target) + `,"content":"written after approval\n"}`)
			r.fake.Responder(func(req fakemodel.Request) (fakemodel.Reply, bool) {
				switch {
				case strings.Contains(string(req.Body), "toolu_write_1"):
					return fakemodel.Reply{Text: "Finished with the file."}, true
				case strings.Contains(req.LastUserText, "Write the approval file"):
					return fakemodel.Reply{ToolCall: &fakemodel.ToolCall{ID: "toolu_write_1", Name: "Write", Input: input}}, true
				}
				return fakemodel.Reply{}, false
			})
			var mu sync.Mutex
			var seen []core.ApprovalRequest
			req := core.CreateRequest{Cwd: r.cwd}
			if tc.kind != "" {
				req.Approve = func(ctx context.Context, ar core.ApprovalRequest) core.ApprovalDecision {
					mu.Lock()
					seen = append(seen, ar)
					mu.Unlock()
					for _, o := range ar.Options {
						if o.Kind == tc.kind {
							return core.ApprovalDecision{OptionID: o.ID, Kind: o.Kind, By: core.DecidedByUser}
						}
					}
					t.Errorf("the agent offered no %s option: %+v", tc.kind, ar.Options)
					return core.ApprovalDecision{Kind: core.RejectOnce}
				}
			}
			rec := adaptertest.NewEvents()
			l, err := acp.New(r.cfg).CreateSession(ctx, req, rec.Sink)
			if err != nil {
				t.Fatal(err)
			}
			closeLive(t, l)
			if _, err := l.Prompt(ctx, text("Write the approval file please.")); err != nil {
				t.Fatal(err)
			}
			es := rec.Entries()
			_, statErr := os.Stat(target)
			if tc.written != (statErr == nil) {
				t.Errorf("file written = %v, want %v", statErr == nil, tc.written)
			}
			mu.Lock()
			if tc.kind != "" && (len(seen) != 1 || seen[0].ToolCallID == "" || seen[0].Kind != "edit" || len(seen[0].RawInput) == 0) {
				t.Errorf("approver saw %+v", seen)
			}
			mu.Unlock()
			done := ofKind(es, core.KindToolCompleted)
			if tc.written && len(done) == 0 {
				t.Errorf("the allowed tool's result was not recorded: %v", kindsOf(es))
			}
			if !tc.written {
				// The agent saw the refusal: its tool call failed with it.
				if len(done) != 1 || field(t, done[0], "status") != "failed" ||
					!strings.Contains(string(done[0].Payload), "refused permission") {
					t.Errorf("the refused tool call ended as %v", done)
				}
			}
		})
	}
}

// TestRealAgentCompactRefused: claude-code-acp 0.16.2 lists a compact
// command but reports no compaction over ACP (no compaction_update, no
// sessionCapabilities.compaction), so Bridge could not record one: the
// probe says compaction.command is unavailable and why, and Compact is
// refused with ErrUnsupported without sending anything to the agent.
func TestRealAgentCompactRefused(t *testing.T) {
	r := newRealAgent(t)
	ctx := testCtx(t)
	r.answer("Say hello", "Hello!")
	h := acp.New(r.cfg)
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: r.cwd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	if _, err := l.Prompt(ctx, text("Say hello")); err != nil {
		t.Fatal(err)
	}
	for _, c := range h.Probe(ctx).Capabilities {
		if c.Name == core.CapCompactCommand && (c.Available || !strings.Contains(c.Detail, "reports no compaction")) {
			t.Errorf("probe: %+v, want unavailable because the agent reports no compaction", c)
		}
	}
	before := len(r.fake.Requests())
	_, err = l.(core.Compactor).Compact(ctx, "keep the word ZEBRA-55")
	if !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("Compact: %v, want ErrUnsupported", err)
	}
	if n := len(r.fake.Requests()) - before; n != 0 {
		t.Errorf("a refused Compact sent %d model requests", n)
	}
}

func kindsOf(es []core.NewEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, string(e.Kind))
	}
	return out
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
