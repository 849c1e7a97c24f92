package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// fakeProviderConfig is OpenCode configuration pointing its only model at
// the fake model server.
func fakeProviderConfig(url string) string {
	cfg := map[string]any{
		"provider": map[string]any{"fake": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "Fake",
			"options": map[string]any{"baseURL": url + "/v1", "apiKey": "sk-dummy"},
			"models": map[string]any{"fake-model": map[string]any{
				"name": "Fake Model", "limit": map[string]any{"context": 100000, "output": 4096}}},
		}},
		"model":       "fake/fake-model",
		"small_model": "fake/fake-model",
		"autoupdate":  false,
		"share":       "disabled",
	}
	b, _ := json.Marshal(cfg)
	return string(b)
}

// offlineEnv keeps OpenCode from reaching the network. The registry
// settings point the package installs OpenCode starts on its own (its
// config folder's dependencies) at a closed port on 127.0.0.1: without
// them every test server resolved registry.npmjs.org and fetched packages
// over HTTPS, and spent CPU-seconds installing them while turns ran.
var offlineEnv = []string{
	"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1",
	"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
	"OPENCODE_DISABLE_SHARE=1",
	"NPM_CONFIG_REGISTRY=http://127.0.0.1:9/", "BUN_CONFIG_REGISTRY=http://127.0.0.1:9/",
}

// realHost returns a Host running the real opencode against model, with
// its HOME and XDG directories under home.
func realHost(t *testing.T, bin, home string, model *fakemodel.Server) *Host {
	t.Helper()
	// An OpenCode start costs about 8 CPU-seconds: at load 35 on two cores
	// it took over the default 90 s.
	h := New(Config{Command: bin, Home: home, ConfigJSON: fakeProviderConfig(model.URL), Env: offlineEnv,
		StartTimeout: 5 * time.Minute})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		h.Close(ctx)
	})
	return h
}

func startModel(t *testing.T) *fakemodel.Server {
	t.Helper()
	m, err := fakemodel.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func text(t *testing.T, e core.NewEntry) string {
	t.Helper()
	var p struct {
		Text string `json:"text"`
	}
	json.Unmarshal(e.Payload, &p)
	return p.Text
}

// TestEndToEnd drives the real `opencode serve` against the fake model
// server: turns (text, tool call, model failure), a manual compaction, the
// host-level calls, native resume from a fresh Host (a new server process on
// the same data directory), a failed resume, and the server dying.
func TestEndToEnd(t *testing.T) {
	bin := adaptertest.FindBinary(t, "opencode")
	model := startModel(t)
	home := t.TempDir()
	cwd := t.TempDir()
	// The start and each subtest have their own bound, so that a loaded
	// machine does not time out the whole sequence as one.
	stepCtx := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	ctx := stepCtx(t)
	h := realHost(t, bin, home, model)

	log := &sinkLog{}
	live, err := h.CreateSession(ctx, core.CreateRequest{Cwd: cwd, Title: "e2e"}, log.sink)
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	nativeID := live.NativeID()
	if !strings.HasPrefix(nativeID, "ses_") {
		t.Fatalf("native id = %q", nativeID)
	}

	t.Run("turn", func(t *testing.T) {
		ctx := stepCtx(t)
		// OpenCode also asks the small model for a title on a session's first
		// turn; answer by request, not by arrival order.
		model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
			if strings.Contains(strings.ToLower(string(r.Body)), "title generator") {
				return fakemodel.Reply{Text: "A title"}, true
			}
			return fakemodel.Reply{Text: "the answer is 42"}, true
		})
		res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "what is the answer?"}})
		if err != nil || res.StopReason != "end_turn" {
			t.Fatalf("Prompt = %+v, %v", res, err)
		}
		var found bool
		for _, e := range ofKind(log.entries(), core.KindAssistantMessage) {
			found = found || text(t, e) == "the answer is 42"
		}
		if !found {
			t.Fatalf("no assistant.message with the model's text when Prompt returned: %v", kinds(log.entries()))
		}
		for _, e := range log.entries() {
			if e.Kind == core.KindUserMessage {
				t.Errorf("the prompt was echoed as user.message")
			}
		}
	})

	t.Run("tool-turn", func(t *testing.T) {
		ctx := stepCtx(t)
		target := filepath.Join(cwd, "notes.txt")
		input, _ := json.Marshal(map[string]string{"filePath": target, "content": "written by the fake model\n"})
		model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
			body := string(r.Body)
			if strings.Contains(strings.ToLower(body), "title generator") {
				return fakemodel.Reply{Text: "A title"}, true
			}
			if strings.Contains(r.LastUserText, "write the notes") && !strings.Contains(body, `"role":"tool"`) {
				return fakemodel.Reply{ToolCall: &fakemodel.ToolCall{ID: "call_notes", Name: "write", Input: input}}, true
			}
			return fakemodel.Reply{Text: "done writing"}, true
		})
		defer model.Responder(nil)
		before := len(log.entries())
		res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "please write the notes"}})
		if err != nil || res.StopReason != "end_turn" {
			t.Fatalf("Prompt = %+v, %v", res, err)
		}
		es := log.entries()[before:]
		if u := ofKind(es, core.KindUsageReported); len(u) != 2 {
			t.Errorf("%d usage.reported entries, want one per model request (2)", len(u))
		}
		es = withoutUsage(es)
		got := strings.Join(kinds(es), ",")
		if !strings.Contains(got, "tool.started,tool.completed,artifact.created") || !strings.HasSuffix(got, "assistant.message") {
			t.Fatalf("tool turn kinds = %s", got)
		}
		if p := payload(t, ofKind(es, core.KindArtifactCreated)[0]); p["path"] != target {
			t.Errorf("artifact = %v", p)
		}
		if b, err := os.ReadFile(target); err != nil || !strings.Contains(string(b), "written by the fake model") {
			t.Errorf("the write tool did not run: %q %v", b, err)
		}
	})

	t.Run("model-error", func(t *testing.T) {
		ctx := stepCtx(t)
		model.Enqueue(fakemodel.Reply{Status: 400})
		res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "this one fails"}})
		if res.StopReason != "error" || err == nil || !strings.Contains(err.Error(), "scripted status 400") {
			t.Fatalf("failed turn = %+v, %v", res, err)
		}
	})

	t.Run("manual-compaction", func(t *testing.T) {
		ctx := stepCtx(t)
		model.SetInputTokens(4321)
		defer model.SetInputTokens(1200)
		before := len(log.entries())
		cp := live.(core.Compactor)
		res, err := cp.Compact(ctx, "keep the numbers")
		if err != nil {
			t.Fatalf("Compact: %v", err)
		}
		if res.FocusApplied || res.FocusNote == "" {
			t.Errorf("Compact result = %+v; summarize takes no focus", res)
		}
		got := ofKind(log.entries()[before:], core.KindContextCompacted)
		if len(got) != 1 {
			t.Fatalf("%d context.compacted entries, want exactly 1 (%v)", len(got), kinds(log.entries()[before:]))
		}
		var c core.Compacted
		json.Unmarshal(got[0].Payload, &c)
		if c.Harness != "opencode" || c.Trigger != core.TriggerManual || !strings.HasPrefix(c.NativeID, "prt_") {
			t.Errorf("compacted = %+v", c)
		}
		if c.PreTokens == nil || *c.PreTokens != 4321 || c.PostTokens != nil {
			t.Errorf("pre/post tokens = %v/%v, want 4321/unknown", c.PreTokens, c.PostTokens)
		}
		if !strings.Contains(c.Summary, "<summary>") {
			t.Errorf("summary = %q", c.Summary)
		}
		var sawSummary bool
		for _, r := range model.Requests() {
			sawSummary = sawSummary || r.IsSummaryRequest()
		}
		if !sawSummary {
			t.Error("the model never got a summarisation request")
		}
	})

	t.Run("host-calls", func(t *testing.T) {
		ctx := stepCtx(t)
		if err := live.Rename(ctx, "renamed by bridge"); err != nil {
			t.Fatalf("Rename: %v", err)
		}
		list, err := h.ListSessions(ctx, cwd)
		if err != nil || len(list) != 1 || list[0].NativeID != nativeID || list[0].Title != "renamed by bridge" {
			t.Fatalf("ListSessions = %+v, %v", list, err)
		}
		hist, err := h.History(ctx, nativeID)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(kinds(hist), ",")
		if !strings.HasPrefix(got, "user.message,assistant.message") || !strings.Contains(got, "tool.completed") || !strings.Contains(got, "context.compacted") {
			t.Errorf("history kinds = %s", got)
		}
		checkEntries(t, hist)
		models, err := h.Models(ctx)
		var hasFake bool
		for _, m := range models {
			hasFake = hasFake || m.ID == "fake/fake-model"
		}
		if err != nil || !hasFake {
			t.Errorf("Models = %d models, %v; want fake/fake-model", len(models), err)
		}
		presets, err := h.Presets(ctx)
		var hasBuild bool
		for _, p := range presets {
			hasBuild = hasBuild || p.Agent == "build"
		}
		if err != nil || !hasBuild {
			t.Errorf("Presets = %+v, %v; want the build agent", presets, err)
		}
		ws, err := h.Workspaces(ctx)
		if err != nil || len(ws) == 0 || ws[0].Path != cwd {
			t.Errorf("Workspaces = %+v, %v", ws, err)
		}
	})

	ctx = stepCtx(t)
	if err := live.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}

	h2 := realHost(t, bin, home, model)
	t.Run("native-resume-fresh-host", func(t *testing.T) {
		ctx := stepCtx(t)
		log2 := &sinkLog{}
		again, err := h2.Resume(ctx, core.ResumeRequest{CreateRequest: core.CreateRequest{Cwd: cwd}, NativeID: nativeID}, log2.sink)
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		defer again.Close(ctx)
		if again.NativeID() != nativeID {
			t.Fatalf("resumed NativeID = %q", again.NativeID())
		}
		model.Enqueue(fakemodel.Reply{Text: "still here"})
		res, err := again.Prompt(ctx, []core.Content{{Type: "text", Text: "are you there?"}})
		if err != nil || res.StopReason != "end_turn" {
			t.Fatalf("Prompt after resume = %+v, %v", res, err)
		}
		reqs := model.Requests()
		last := string(reqs[len(reqs)-1].Body)
		if !strings.Contains(last, "are you there?") || !strings.Contains(last, "<summary>") {
			t.Errorf("the resumed session's model request lacks its earlier context: %.300s", last)
		}
	})

	t.Run("failed-resume", func(t *testing.T) {
		ctx := stepCtx(t)
		live, err := h2.Resume(ctx, core.ResumeRequest{NativeID: "ses_bogus0000000000000000"}, nil)
		var re *core.ResumeError
		if live != nil || !errors.As(err, &re) {
			t.Fatalf("Resume(bogus) = %v, %v", live, err)
		}
		if re.NativeText != "Session not found: ses_bogus0000000000000000" {
			t.Errorf("NativeText = %q, want the server's text", re.NativeText)
		}
	})

	t.Run("server-dies", func(t *testing.T) {
		ctx := stepCtx(t)
		l, err := h2.CreateSession(ctx, core.CreateRequest{Cwd: cwd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		h2.mu.Lock()
		pid := h2.srv.proc.Cmd.Process.Pid
		h2.mu.Unlock()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		select {
		case <-l.Done():
		case <-ctx.Done():
			t.Fatal("Done did not close after the server was killed")
		}
		x := l.Exit()
		if x.Code == 0 || !strings.Contains(x.Err, "killed") {
			t.Errorf("Exit = %+v after SIGKILL", x)
		}
		if _, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: "x"}}); err == nil {
			t.Error("Prompt on a dead server succeeded")
		} else {
			t.Logf("prompt on dead server: %v", err)
		}
	})
}
