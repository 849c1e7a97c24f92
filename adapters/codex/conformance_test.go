package codex

import (
	"encoding/json"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// TestConformance runs the shared adapter suite against the real codex
// program and the fake model server.
func TestConformance(t *testing.T) {
	var env *e2eEnv
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost {
			env = newE2E(t)
			return New(env.cfg)
		},
		Script: func(t *testing.T) { env.model.Enqueue(fakemodel.Reply{Text: "hello from codex"}) },
		ScriptCompaction: func(t *testing.T) {
			env.model.Enqueue(fakemodel.Reply{Text: "<summary>a greeting was exchanged</summary>"})
		},
		Claims: []string{
			core.CapSessionList, core.CapSessionCreate, core.CapSessionHistory, core.CapSessionModels,
			core.CapSessionSelect, core.CapSessionPrompt, core.CapSessionCancel, core.CapSessionRename,
			core.CapWorkspaceList, core.CapWorkspaceArchive, core.CapPresetList, core.CapGoalCreate,
			core.CapGoalPause, core.CapGoalClear, core.CapNativeResume, core.CapCompactCommand, core.CapContextGauge,
			core.CapApprovalRelay, core.CapPromptSteer, core.CapSessionFork,
		},
		// A command Codex does not trust: it asks (untrusted policy).
		Approval: func(t *testing.T) []core.Content {
			args, _ := json.Marshal(map[string]any{"cmd": "touch conformance.txt"})
			env.model.Enqueue(fakemodel.Reply{ToolCall: &fakemodel.ToolCall{ID: "call_conf_1", Name: "exec_command", Input: args}},
				fakemodel.Reply{Text: "done"})
			return []core.Content{{Type: "text", Text: "touch the conformance file"}}
		},
	})
}
