package opencode

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// TestConformance runs the shared adapter suite against the real `opencode
// serve`. The program starts slowly (seconds, tens of seconds on a loaded
// machine), so one server process is started here and every subtest gets a
// fresh Host attached to it (its own event subscription and sessions).
func TestConformance(t *testing.T) {
	bin := adaptertest.FindBinary(t, "opencode")
	model := startModel(t)
	// Edits are asked about, so approval.relay can be shown.
	primary := New(Config{Command: bin, Home: t.TempDir(), ConfigJSON: askingConfig(model.URL), Env: offlineEnv})
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		primary.Close(cctx)
	})
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
			core.CapNativeResume, core.CapCompactCommand, core.CapContextGauge, core.CapApprovalRelay, core.CapSessionFork,
		},
		Approval: func(t *testing.T) []core.Content {
			in, _ := json.Marshal(map[string]string{"filePath": filepath.Join(t.TempDir(), "conformance.txt"), "content": "x\n"})
			var once sync.Once
			model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
				body := string(r.Body)
				if strings.Contains(strings.ToLower(body), "title generator") {
					return fakemodel.Reply{Text: "A title"}, true
				}
				if !strings.Contains(r.LastUserText, "write the conformance file") || strings.Contains(body, `"role":"tool"`) {
					return fakemodel.Reply{}, false
				}
				reply := fakemodel.Reply{Text: "done"}
				once.Do(func() {
					reply = fakemodel.Reply{ToolCall: &fakemodel.ToolCall{ID: "call_conf_1", Name: "write", Input: in}}
				})
				return reply, true
			})
			return []core.Content{{Type: "text", Text: "write the conformance file"}}
		},
	})
}
