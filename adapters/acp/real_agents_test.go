package acp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/acp"
	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// realACPAgent is one real ACP agent pinned in package.json, driven
// against the fake model server with its own HOME and XDG folders.
type realACPAgent struct {
	bin, pkg string
	// env returns the agent's environment for the fake model server and a
	// scratch home.
	env func(t *testing.T, fake *fakemodel.Server, home string) []string
}

// anthropicEnv points a Claude-based agent at the fake Anthropic API.
func anthropicEnv(_ *testing.T, fake *fakemodel.Server, home string) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + fake.URL, "ANTHROPIC_API_KEY=sk-ant-dummy-for-tests",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1", "IS_SANDBOX=1",
	}
}

// codexEnv gives codex-acp a CODEX_HOME whose only provider is the fake
// OpenAI Responses API.
func codexEnv(t *testing.T, fake *fakemodel.Server, home string) []string {
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(fakemodel.CodexConfig(fake.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"CODEX_HOME=" + codexHome, "FAKE_API_KEY=sk-fake", "RUST_LOG=error", "NO_COLOR=1"}
}

var realACPAgents = []realACPAgent{
	{bin: "claude-code-acp", pkg: "@zed-industries/claude-code-acp", env: anthropicEnv},
	{bin: "claude-agent-acp", pkg: "@zed-industries/claude-agent-acp", env: anthropicEnv},
	{bin: "codex-acp", pkg: "@zed-industries/codex-acp", env: codexEnv},
}

// npmVersion reads the installed version of an npm package.
func npmVersion(t *testing.T, pkg string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(adaptertest.RepoRoot(t), "node_modules", pkg, "package.json"))
	if err != nil {
		t.Fatalf("%s is not installed: %v", pkg, err)
	}
	var p struct {
		Version string `json:"version"`
	}
	_ = json.Unmarshal(b, &p)
	return p.Version
}

// TestRealAgentsTurn drives each real ACP agent pinned in package.json
// through one turn: a new session answers a prompt with the fake model's
// text, and the probe names the program's version. (The whole conformance
// suite runs on them in TestRealAgentsConformance.)
func TestRealAgentsTurn(t *testing.T) {
	for _, a := range realACPAgents {
		a := a
		t.Run(a.bin, func(t *testing.T) {
			bin := adaptertest.FindBinary(t, a.bin)
			t.Logf("target: %s %s (%s)", a.pkg, npmVersion(t, a.pkg), bin)
			fake, err := fakemodel.Start()
			if err != nil {
				t.Fatal(err)
			}
			defer fake.Close()
			fake.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
				if r.IsSummaryRequest() {
					return fakemodel.Reply{}, false
				}
				return fakemodel.Reply{Text: "The answer is 42."}, true
			})
			home := t.TempDir()
			env := append([]string{"HOME=" + home}, a.env(t, fake, home)...)
			h := acp.New(acp.Config{Name: "acp", Command: bin, Env: env})
			ctx := testCtx(t)
			rec := adaptertest.NewEvents()
			l, err := h.CreateSession(ctx, reqIn(t), rec.Sink)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close(ctx)
			res, err := l.Prompt(ctx, text("What is the answer?"))
			if err != nil || res.StopReason != "end_turn" {
				t.Fatalf("Prompt = %+v, %v", res, err)
			}
			// codex-acp sends Codex's own warnings as agent text first
			// ("Model metadata for `fake-model` not found…").
			if got := assistantText(t, rec.Entries()); !strings.HasSuffix(got, "The answer is 42.") {
				t.Fatalf("assistant text %q, want the fake model's answer", got)
			}
			p := h.Probe(ctx)
			if p.Version != npmVersion(t, a.pkg) {
				t.Errorf("probe version %q, want %s's %s", p.Version, a.pkg, npmVersion(t, a.pkg))
			}
			t.Logf("probe: version %q; compaction.command %v, context.gauge %v", p.Version, p.Has(core.CapCompactCommand), p.Has(core.CapContextGauge))
		})
	}
}
