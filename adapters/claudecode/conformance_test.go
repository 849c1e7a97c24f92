package claudecode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// TestConformance runs the shared adapter suite against the real `claude`
// program talking to the fake model server.
func TestConformance(t *testing.T) {
	t.Parallel()
	bin := adaptertest.FindBinary(t, "claude")
	var current *fakemodel.Server
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost {
			srv, err := fakemodel.Start()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			current = srv
			home := filepath.Join(t.TempDir(), "home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				t.Fatal(err)
			}
			return New(Config{Command: bin, Env: offlineEnv(srv.URL, home), ConfigDir: filepath.Join(home, ".claude")})
		},
		Script:           func(t *testing.T) { current.Enqueue(fakemodel.Reply{Text: "hello from the fake model"}) },
		ScriptCompaction: func(t *testing.T) {},
		Claims: []string{core.CapSessionList, core.CapSessionCreate, core.CapSessionHistory, core.CapSessionModels,
			core.CapSessionSelect, core.CapSessionPrompt, core.CapSessionCancel, core.CapSessionRename,
			core.CapWorkspaceList, core.CapPresetList, core.CapNativeResume, core.CapCompactCommand,
			core.CapCompactionFocus, core.CapApprovalRelay, core.CapSessionFork, core.CapPromptSteer},
		// A Write the default permission mode does not allow: Claude Code
		// asks (can_use_tool).
		Approval: func(t *testing.T) []core.Content {
			in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(t.TempDir(), "conformance.txt"), "content": "x\n"})
			current.Enqueue(fakemodel.Reply{ToolCall: &fakemodel.ToolCall{ID: "toolu_conf_1", Name: "Write", Input: in}},
				fakemodel.Reply{Text: "done"})
			return []core.Content{{Type: "text", Text: "write the conformance file"}}
		},
	})
}
