package opencode

import (
	"context"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/core"
)

// TestConformance runs the shared adapter suite against the real `opencode
// serve`. The program starts slowly (seconds, tens of seconds on a loaded
// machine), so one server process is started here and every subtest gets a
// fresh Host attached to it (its own event subscription and sessions).
func TestConformance(t *testing.T) {
	bin := adaptertest.FindBinary(t, "opencode")
	model := startModel(t)
	primary := realHost(t, bin, t.TempDir(), model)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := primary.ensureServer(ctx)
	if err != nil {
		t.Fatalf("starting opencode serve: %v", err)
	}
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost {
			h := New(primary.cfg)
			// Each subtest attaches with its own bound: the suite as a whole
			// may take longer than one bound on a loaded machine.
			actx, acancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer acancel()
			if _, err := h.attach(actx, srv.base); err != nil {
				t.Fatalf("attach: %v", err)
			}
			t.Cleanup(func() { h.Close(context.Background()) })
			return h
		},
		Claims: []string{
			core.CapSessionList, core.CapSessionCreate, core.CapSessionHistory, core.CapSessionModels,
			core.CapSessionSelect, core.CapSessionPrompt, core.CapSessionCancel, core.CapSessionRename,
			core.CapWorkspaceList, core.CapWorkspaceArchive, core.CapPresetList,
			core.CapNativeResume, core.CapCompactCommand, core.CapContextGauge,
		},
	})
}
