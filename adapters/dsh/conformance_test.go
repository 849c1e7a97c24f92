package dsh_test

import (
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/dsh"
	"github.com/bridge-dev/bridge/adapters/dsh/dshtest"
	"github.com/bridge-dev/bridge/core"
)

// claims is what the adapter offers against a DSH 0.1.0-rc.8 web server
// (the fake replays rc.8's routes: no session.historyWindow; /compact takes
// no focus).
var claims = []string{
	core.CapSessionList, core.CapSessionCreate, core.CapSessionHistory, core.CapSessionModels,
	core.CapSessionSelect, core.CapSessionPrompt, core.CapSessionCancel, core.CapSessionRename,
	core.CapWorkspaceList, core.CapWorkspaceArchive, core.CapPresetList, core.CapGoalCreate, core.CapGoalPause,
	core.CapAttachment, core.CapGoalClear, core.CapNativeResume, core.CapCompactCommand, core.CapContextGauge,
}

// TestConformance runs the shared adapter suite against the fake DSH web
// server (adapters/dsh/dshtest), one server per subtest.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost {
			srv := dshtest.Start(t, dshtest.Options{})
			return dsh.New(dsh.Config{BaseURL: srv.URL, PollInterval: 5 * time.Millisecond})
		},
		Claims:  claims,
		Timeout: time.Minute,
	})
}
