package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// These tests drive the real harness programs through the bridge binary
// against the fake model server, whose model calls a tool the preset does
// not allow: the harness asks, Bridge relays session/requestPermission to
// a client that declared capabilities.session.requestPermission, and the
// client's answer decides.

// toolOnce makes the fake model answer the first request whose last user
// text contains match with call, and later ones (the turn's follow-up
// after the tool result) with a plain text.
func toolOnce(h *harnessEnv, match string, call *fakemodel.ToolCall) {
	var mu sync.Mutex
	used := false
	h.on(match, func(r fakemodel.Request) fakemodel.Reply {
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(strings.ToLower(string(r.Body)), "title generator") {
			return fakemodel.Reply{Text: "A title"} // OpenCode names the session first
		}
		if used {
			return fakemodel.Reply{Text: "Finished."}
		}
		used = true
		return fakemodel.Reply{ToolCall: call}
	})
}

// answering is a client's user: it answers each session/requestPermission
// with the option of the next kind in kinds, and keeps what it was asked.
type answering struct {
	mu    sync.Mutex
	kinds []string
	asked []schema.SessionRequestPermissionParams
}

func (a *answering) handle(m wireMsg) (any, *wireError) {
	if m.Method != "session/requestPermission" {
		return nil, &wireError{Code: -32601, Message: "not supported"}
	}
	p, err := rpctest.ParamsAs[schema.SessionRequestPermissionParams](m)
	if err != nil {
		return nil, &wireError{Code: -32602, Message: err.Error()}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, p)
	if len(a.kinds) == 0 {
		return schema.SessionRequestPermissionResult{Outcome: schema.PermissionOutcome{Outcome: schema.OutcomeCancelled}}, nil
	}
	want := a.kinds[0]
	a.kinds = a.kinds[1:]
	for _, o := range p.Options {
		if string(o.Kind) == want {
			return schema.SessionRequestPermissionResult{Outcome: schema.PermissionOutcome{Outcome: schema.OutcomeSelected, OptionID: o.OptionID}}, nil
		}
	}
	return nil, &wireError{Code: -32602, Message: "no option of kind " + want}
}

func (a *answering) requests() []schema.SessionRequestPermissionParams {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]schema.SessionRequestPermissionParams(nil), a.asked...)
}

// approvalCase is one harness's tool call that needs permission.
type approvalCase struct {
	harness string
	// call returns the model's tool call that creates file in the project.
	call func(h *harnessEnv, name string) *fakemodel.ToolCall
	// refusal is text the harness shows the model for a refusal ("" when
	// the harness stops its loop instead; toolRefused then checks the
	// recorded tool result).
	refusal string
	// toolRefused, when set, says whether a recorded tool.completed
	// payload is the harness's refusal.
	toolRefused func(p core.ToolCompletedPayload) bool
	// setup adds the harness to the environment's configuration.
	setup func(t *testing.T, h *harnessEnv)
}

var approvalCases = []approvalCase{
	{harness: "claude-code", refusal: "refused", call: func(h *harnessEnv, name string) *fakemodel.ToolCall {
		in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(h.cwd, name), "content": "approved\n"})
		return &fakemodel.ToolCall{ID: "toolu_" + strings.TrimSuffix(name, ".txt"), Name: "Write", Input: in}
	}},
	{harness: "codex", refusal: "rejected", call: func(h *harnessEnv, name string) *fakemodel.ToolCall {
		in, _ := json.Marshal(map[string]any{"cmd": "touch " + name, "workdir": h.cwd})
		return &fakemodel.ToolCall{ID: "call_" + strings.TrimSuffix(name, ".txt"), Name: "exec_command", Input: in}
	}},
	{harness: "acp", setup: addACP, call: func(h *harnessEnv, name string) *fakemodel.ToolCall {
		in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(h.cwd, name), "content": "approved\n"})
		return &fakemodel.ToolCall{ID: "toolu_acp_" + strings.TrimSuffix(name, ".txt"), Name: "Write", Input: in}
	}, toolRefused: func(p core.ToolCompletedPayload) bool {
		return p.Status == "failed" && strings.Contains(string(mustJSON(p)), "refused permission")
	}},
	{harness: "opencode", setup: addOpenCode, call: func(h *harnessEnv, name string) *fakemodel.ToolCall {
		in, _ := json.Marshal(map[string]string{"filePath": filepath.Join(h.cwd, name), "content": "approved\n"})
		return &fakemodel.ToolCall{ID: "call_oc_" + strings.TrimSuffix(name, ".txt"), Name: "write", Input: in}
	}, toolRefused: func(p core.ToolCompletedPayload) bool {
		return p.Status == "error" && strings.Contains(string(mustJSON(p)), "rejected permission")
	}},
}

// setHarness adds or replaces one harness section of the environment's
// config.json.
func setHarness(t *testing.T, h *harnessEnv, name string, section map[string]any) {
	t.Helper()
	h.config["harnesses"].(map[string]any)[name] = section
	h.writeConfig(t)
}

// addACP configures the real claude-code-acp against the fake model.
func addACP(t *testing.T, h *harnessEnv) {
	setHarness(t, h, "acp", map[string]any{"command": adaptertest.FindBinary(t, "claude-code-acp"),
		"env": map[string]string{"ANTHROPIC_BASE_URL": h.fake.URL, "ANTHROPIC_API_KEY": "sk-ant-dummy-for-tests",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
			"DISABLE_ERROR_REPORTING": "1", "HOME": h.home, "IS_SANDBOX": "1"}})
}

// addOpenCode configures the real opencode against the fake model, with
// edits asked about (OpenCode's permission config).
func addOpenCode(t *testing.T, h *harnessEnv) {
	oc := map[string]any{
		"provider": map[string]any{"fake": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "Fake",
			"options": map[string]any{"baseURL": h.fake.URL + "/v1", "apiKey": "sk-dummy"},
			"models": map[string]any{"fake-model": map[string]any{"name": "Fake Model",
				"limit": map[string]any{"context": 100000, "output": 4096}}},
		}},
		"model": "fake/fake-model", "small_model": "fake/fake-model", "autoupdate": false, "share": "disabled",
		"permission": map[string]any{"edit": "ask", "bash": "ask"},
	}
	setHarness(t, h, "opencode", map[string]any{"command": adaptertest.FindBinary(t, "opencode"),
		"env": map[string]string{"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_SHARE": "1",
			"NPM_CONFIG_REGISTRY": "http://127.0.0.1:9/", "BUN_CONFIG_REGISTRY": "http://127.0.0.1:9/"},
		"options": map[string]any{"home": filepath.Join(h.home, "opencode"), "configJson": string(mustJSON(oc))}})
}

// approvals returns the approval.resolved payloads and the tool.completed
// payloads of a session's record.
func approvalsOf(t *testing.T, c *client, sid string) (requested []core.ApprovalRequestedPayload, resolved []core.ApprovalResolvedPayload, tools []core.ToolCompletedPayload) {
	t.Helper()
	for _, e := range history(t, c, sid) {
		switch core.Kind(e.Kind) {
		case core.KindApprovalRequested:
			requested = append(requested, payloadAs[core.ApprovalRequestedPayload](t, e))
		case core.KindApprovalResolved:
			resolved = append(resolved, payloadAs[core.ApprovalResolvedPayload](t, e))
		case core.KindToolCompleted:
			tools = append(tools, payloadAs[core.ToolCompletedPayload](t, e))
		}
	}
	return
}

func TestE2EApprovalsRelayedToTheClient(t *testing.T) {
	t.Parallel()
	for _, tc := range approvalCases {
		t.Run(tc.harness, func(t *testing.T) {
			t.Parallel()
			h := newHarnessEnv(t, harnessOptions{CodexArgs: []string{"-c", `sandbox_mode="workspace-write"`}})
			if tc.setup != nil {
				tc.setup(t, h)
			}
			toolOnce(h, "create first.txt", tc.call(h, "first.txt"))
			toolOnce(h, "create second.txt", tc.call(h, "second.txt"))
			user := &answering{kinds: []string{"allow_once", "reject_once"}}
			c := startBridge(t, h.dataDir)
			c.SetOnRequest(user.handle)
			c.initializeWith(schema.ClientCapabilities{Session: &schema.SessionClientCapabilities{RequestPermission: true}}, nil)
			sid := h.create(t, c, tc.harness, "approvals")

			say(t, c, sid, "create first.txt")
			asked := user.requests()
			if len(asked) != 1 {
				t.Fatalf("the client was asked %d times, want once", len(asked))
			}
			p := asked[0]
			kinds := map[string]bool{}
			for _, o := range p.Options {
				kinds[string(o.Kind)] = true
			}
			if p.SessionID != sid || p.ToolCall.ToolCallID == "" || p.ToolCall.Title == "" || p.ToolCall.Kind == "" ||
				len(p.ToolCall.RawInput) == 0 || !kinds["allow_once"] || !kinds["reject_once"] {
				t.Errorf("session/requestPermission params %+v", p)
			}
			if _, err := os.Stat(filepath.Join(h.cwd, "first.txt")); err != nil {
				t.Errorf("the allowed tool did not run: %v", err)
			}
			req, res, tools := approvalsOf(t, c, sid)
			if len(req) != 1 || len(res) != 1 || res[0].By != "user" || !res[0].Allowed ||
				res[0].ApprovalID != req[0].ApprovalID {
				t.Fatalf("approval entries %v %v", req, res)
			}
			if len(tools) != 1 || tools[0].IsError {
				t.Fatalf("the allowed tool's result was not recorded: %v", tools)
			}

			// A refusal may stop the harness's loop (OpenCode): any stop but an error.
			pr, err := c.SessionPrompt(t.Context(), schema.SessionPromptParams{SessionID: sid, Content: prompt("create second.txt")})
			must(t, "session/prompt", err)
			if pr.StopReason == "error" {
				t.Fatalf("the refused turn ended with an error")
			}
			if _, err := os.Stat(filepath.Join(h.cwd, "second.txt")); !os.IsNotExist(err) {
				t.Errorf("a refused tool ran: %v", err)
			}
			_, res, tools = approvalsOf(t, c, sid)
			if len(res) != 2 || res[1].By != "user" || res[1].Allowed || res[1].OptionKind != "reject_once" {
				t.Fatalf("approval.resolved %v", res)
			}
			if tc.toolRefused != nil {
				if len(tools) < 2 || !tc.toolRefused(tools[len(tools)-1]) {
					t.Errorf("the harness did not record the refusal: %v", tools)
				}
			} else {
				var told string
				for _, r := range h.fake.Requests() {
					told += requestText(r) + "\n"
				}
				if !strings.Contains(strings.ToLower(told), tc.refusal) {
					t.Errorf("the model was not told of the refusal (%q)", tc.refusal)
				}
			}
		})
	}
}

func TestE2EApprovalsWithoutTheCapabilityAreRejected(t *testing.T) {
	t.Parallel()
	for _, tc := range approvalCases {
		t.Run(tc.harness, func(t *testing.T) {
			t.Parallel()
			h := newHarnessEnv(t, harnessOptions{CodexArgs: []string{"-c", `sandbox_mode="workspace-write"`}})
			if tc.setup != nil {
				tc.setup(t, h)
			}
			toolOnce(h, "create third.txt", tc.call(h, "third.txt"))
			user := &answering{kinds: []string{"allow_once"}}
			c := startBridge(t, h.dataDir)
			c.SetOnRequest(user.handle)
			c.initialize(nil) // no capabilities.session.requestPermission
			sid := h.create(t, c, tc.harness, "no capability")
			say(t, c, sid, "create third.txt")
			if n := len(user.requests()); n != 0 {
				t.Fatalf("a client without the capability was asked %d times", n)
			}
			if _, err := os.Stat(filepath.Join(h.cwd, "third.txt")); !os.IsNotExist(err) {
				t.Errorf("a tool nobody allowed ran: %v", err)
			}
			_, res, _ := approvalsOf(t, c, sid)
			if len(res) != 1 || res[0].By != "policy" || res[0].Allowed || !strings.Contains(res[0].Reason, "requestPermission") {
				t.Fatalf("approval.resolved %v", res)
			}
			// bridge history renders both entries in words.
			if code := c.exit(true); code != 0 {
				t.Fatalf("bridge exit code %d", code)
			}
			out, errOut, code := runCLI(t, nil, "--data-dir", h.dataDir, "history", sid)
			if code != 0 {
				t.Fatalf("bridge history: exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, "approval.requested") || !strings.Contains(out, "asks to run ") ||
				!strings.Contains(out, "rejected (reject_once) by policy: the client did not declare") {
				t.Errorf("bridge history output:\n%s", out)
			}
		})
	}
}
