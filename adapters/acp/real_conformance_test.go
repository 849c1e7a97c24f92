package acp_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/acp"
	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// realConformanceAgents are the real agents the conformance suite runs on,
// each with exactly the capabilities its probe must confirm.
var realConformanceAgents = []struct {
	agent  realACPAgent
	claims []string
	// untrusted asks Codex to ask before running commands (its
	// approval_policy "untrusted"); the fake model's tool call is then
	// exec_command instead of Claude's Write.
	untrusted bool
}{
	// claude-code-acp lists a compact command but reports no compaction
	// over ACP, and sends no usage_update: neither is claimed. It
	// advertises session/fork.
	{realACPAgents[0], []string{core.CapSessionList, core.CapSessionCreate, core.CapSessionHistory,
		core.CapSessionModels, core.CapSessionSelect, core.CapSessionPrompt, core.CapSessionCancel,
		core.CapPresetList, core.CapNativeResume, core.CapApprovalRelay, core.CapSessionFork}, false},
	// claude-agent-acp reports usage (a gauge) but, like claude-code-acp,
	// no compaction; it advertises session/fork too.
	{realACPAgents[1], []string{core.CapSessionList, core.CapSessionCreate, core.CapSessionHistory,
		core.CapSessionModels, core.CapSessionSelect, core.CapSessionPrompt, core.CapSessionCancel,
		core.CapPresetList, core.CapNativeResume, core.CapApprovalRelay, core.CapContextGauge, core.CapSessionFork}, false},
	// codex-acp advertises no session/fork.
	{realACPAgents[2], []string{core.CapSessionList, core.CapSessionCreate, core.CapSessionHistory,
		core.CapSessionModels, core.CapSessionSelect, core.CapSessionPrompt, core.CapSessionCancel,
		core.CapPresetList, core.CapNativeResume, core.CapApprovalRelay, core.CapContextGauge}, true},
}

// TestRealAgentsConformance runs the shared conformance suite on each real
// ACP agent pinned in package.json, against the fake model server.
func TestRealAgentsConformance(t *testing.T) {
	for _, rc := range realConformanceAgents {
		a := rc.agent
		bin := adaptertest.FindBinary(t, a.bin)
		ver := npmVersion(t, a.pkg)
		t.Run(a.bin+"@"+ver, func(t *testing.T) {
			t.Logf("target: %s %s (%s)", a.pkg, ver, bin)
			// The approval turn: the fake model asks for a Write in the
			// session's folder, which the agent relays as a permission.
			var (
				mu       sync.Mutex
				cwd      string
				approval int
			)
			adaptertest.Run(t, adaptertest.Harness{
				Cwd: func(t *testing.T) string {
					mu.Lock()
					defer mu.Unlock()
					cwd = t.TempDir()
					return cwd
				},
				Approval: func(t *testing.T) []core.Content {
					mu.Lock()
					defer mu.Unlock()
					approval++
					return text(fmt.Sprintf("Write the approval file %d", approval))
				},
				New: func(t *testing.T) core.BridgeHost {
					fake, err := fakemodel.Start()
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = fake.Close() })
					fake.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
						mu.Lock()
						n, dir := approval, cwd
						mu.Unlock()
						id := fmt.Sprintf("toolu_write_%d", n)
						switch {
						case n > 0 && strings.Contains(string(r.Body), id):
							return fakemodel.Reply{Text: "Finished with the file."}, true
						case n > 0 && strings.Contains(r.LastUserText, fmt.Sprintf("Write the approval file %d", n)):
							path := filepath.Join(dir, fmt.Sprintf("approved-%d.txt", n))
							if rc.untrusted {
								args, _ := json.Marshal(map[string]any{"cmd": "touch " + path, "workdir": dir})
								return fakemodel.Reply{ToolCall: &fakemodel.ToolCall{ID: id, Name: "exec_command", Input: args}}, true
							}
							input := []byte(`{"file_path":` + strconvQuote(path) + `,"content":"written after approval\n"}`)
							return fakemodel.Reply{ToolCall: &fakemodel.ToolCall{ID: id, Name: "Write", Input: input}}, true
						}
						if r.IsSummaryRequest() {
							return fakemodel.Reply{Text: "summary of the conversation"}, true
						}
						return fakemodel.Reply{Text: "hello from the fake model"}, true
					})
					home := t.TempDir()
					env := append([]string{"HOME=" + home}, a.env(t, fake, home)...)
					if rc.untrusted {
						cfg := filepath.Join(home, ".codex", "config.toml")
						b, err := os.ReadFile(cfg)
						if err != nil {
							t.Fatal(err)
						}
						b = []byte(strings.Replace(string(b), `approval_policy = "never"`, `approval_policy = "untrusted"`, 1))
						if err := os.WriteFile(cfg, b, 0o600); err != nil {
							t.Fatal(err)
						}
					}
					h := acp.New(acp.Config{Name: "acp", Command: bin, Env: env})
					warm(t, h)
					return h
				},
				Claims:  rc.claims,
				Timeout: 5 * time.Minute, // as testCtx
			})
		})
	}
}
