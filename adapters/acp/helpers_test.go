package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/acp"
	"github.com/bridge-dev/bridge/core"

	"github.com/bridge-dev/bridge/core/testhome"
)

// scriptAgentBin is the scripted ACP agent, built once by TestMain.
var scriptAgentBin string

func TestMain(m *testing.M) {
	cleanupHome, err := testhome.Isolate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "isolating the test home:", err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "acp-scriptagent")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scriptAgentBin = filepath.Join(dir, "scriptagent")
	build := exec.Command("go", "build", "-o", scriptAgentBin, "./internal/scriptagent")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the scripted ACP agent:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	cleanupHome()
	os.Exit(code)
}

// scriptHost returns a host driving the scripted agent with its own state
// directory; extra environment is appended.
func scriptHost(t *testing.T, state string, env ...string) *acp.Host {
	t.Helper()
	if state == "" {
		state = t.TempDir()
	}
	return acp.New(acp.Config{Name: "acp", Command: scriptAgentBin,
		Env: append([]string{"SCRIPTAGENT_STATE=" + state}, env...), Cwd: t.TempDir(),
		Presets: []core.Preset{{Name: "trusting", ApprovalPolicy: "approve"}, {Name: "careful"}}})
}

func ofKind(es []core.NewEntry, k core.Kind) []core.NewEntry {
	var out []core.NewEntry
	for _, e := range es {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func field(t *testing.T, e core.NewEntry, name string) any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Payload, &m); err != nil {
		t.Fatalf("payload of %s: %v", e.Kind, err)
	}
	return m[name]
}

// testCtx bounds a test's calls. The bound only catches a call that never
// returns: a real agent's session/new took over two minutes at load 38.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func closeLive(t *testing.T, l core.Live) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = l.Close(ctx)
	})
}

func text(s string) []core.Content { return []core.Content{{Type: "text", Text: s}} }

func reqIn(t *testing.T) core.CreateRequest { return core.CreateRequest{Cwd: t.TempDir()} }
