package codex

import (
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
		},
	})
}
