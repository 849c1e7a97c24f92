package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/acp"
	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/core"
)

// TestBridgeDrivesBridgeOverACP runs the shared adapter conformance suite
// on Bridge's own ACP consumer (adapters/acp) with `bridge acp --harness
// fake` as its agent: Bridge driving Bridge. Every capability the consumer
// finds in the agent must work through it as through any ACP agent.
func TestBridgeDrivesBridgeOverACP(t *testing.T) {
	t.Parallel()
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost {
			dataDir := filepath.Join(t.TempDir(), "data")
			h := acp.New(acp.Config{Name: "acp", Command: binPath,
				Args: []string{"--data-dir", dataDir, "acp", "--harness", "fake"},
				Env:  []string{"BRIDGE_FAKE_GAUGE=1", "BRIDGE_FAKE_WINDOW=100000", "BRIDGE_FAKE_COMPACT_FOCUS=1"}})
			// What the consumer knows of an agent comes from its sessions
			// (models, commands, usage): one turn first, as an editor's
			// first session would.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, func(core.Event) {})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: "say warm"}}); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(ctx); err != nil {
				t.Fatal(err)
			}
			return h
		},
		Approval: func(t *testing.T) []core.Content { return []core.Content{{Type: "text", Text: "ask Bash make test"}} },
		// Everything the ACP consumer can use of an agent: Bridge offers it.
		Claims: []string{core.CapSessionList, core.CapSessionCreate, core.CapSessionHistory, core.CapSessionModels,
			core.CapSessionSelect, core.CapSessionPrompt, core.CapSessionCancel, core.CapPresetList, core.CapNativeResume,
			core.CapCompactCommand, core.CapCompactionFocus, core.CapApprovalRelay, core.CapContextGauge, core.CapSessionFork},
		Timeout: 2 * time.Minute,
	})
}
