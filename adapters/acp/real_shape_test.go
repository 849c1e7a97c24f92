package acp_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/acp"
	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/dsh/dshtest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// shapeTurnRequest is the last model request of the SHAPE-TURN turn among
// rs (not a summary or title request).
func shapeTurnRequest(t *testing.T, rs []fakemodel.Request) map[string]any {
	t.Helper()
	var found *fakemodel.Request
	for i, r := range rs {
		if strings.Contains(r.LastUserText, "SHAPE-TURN") && !r.IsSummaryRequest() {
			found = &rs[i]
		}
	}
	if found == nil {
		t.Fatalf("no model request of the SHAPE-TURN turn among %d", len(rs))
	}
	var body map[string]any
	if err := json.Unmarshal(found.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body
}

// acpxExec runs one turn with the real acpx (npm, pinned; on Node 22)
// driving the agent bin directly, without Bridge: `acpx --agent BIN exec`.
// The client offers what Bridge offers: no file system and no terminal
// (--no-fs --no-terminal; with both advertised,
// claude-agent-acp's model request was the same too).
func acpxExec(t *testing.T, bin, cwd, home string, env []string, prompt string) {
	t.Helper()
	node, _, err := dshtest.Programs()
	if err != nil {
		t.Fatalf("acpx needs Node 22: %v", err)
	}
	cli := filepath.Join(adaptertest.RepoRoot(t), "node_modules", "acpx", "dist", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("acpx is not installed (%v): run `bash .ci/test` (npm ci installs the pinned acpx)", err)
	}
	ctx := testCtx(t)
	cmd := exec.CommandContext(ctx, node, cli, "--agent", bin, "--cwd", cwd, "--approve-all", "--no-fs", "--no-terminal",
		"--timeout", "280", "--format", "quiet", "exec", prompt) // within testCtx
	cmd.Dir = cwd
	cmd.Env = append(append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "NO_COLOR=1"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("acpx exec: %v\n%s", err, out)
	}
}

// TestRealAgentsRequestShape: for each real ACP agent, an ordinary turn
// through Bridge against the same turn driven by another ACP client
// without Bridge (acpx, a headless ACP client nobody on the project
// wrote), with the same HOME, folder and environment, diffed from the fake
// model's request log: the requests are equal apart from ids and the
// differences docs/checkpoints.md lists for ACP agents: none.
func TestRealAgentsRequestShape(t *testing.T) {
	for _, a := range realACPAgents {
		a := a
		t.Run(a.bin, func(t *testing.T) {
			bin := adaptertest.FindBinary(t, a.bin)
			fake, err := fakemodel.Start()
			if err != nil {
				t.Fatal(err)
			}
			defer fake.Close()
			fake.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
				if r.IsSummaryRequest() {
					return fakemodel.Reply{}, false
				}
				return fakemodel.Reply{Text: "SHAPE-REPLY"}, true
			})
			home, cwd := t.TempDir(), t.TempDir()
			agentEnv := a.env(t, fake, home)
			h := acp.New(acp.Config{Name: "acp", Command: bin, Env: append([]string{"HOME=" + home}, agentEnv...)})
			ctx := testCtx(t)
			l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: cwd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Prompt(ctx, text("SHAPE-TURN hello")); err != nil {
				t.Fatal(err)
			}
			bridge := shapeTurnRequest(t, fake.Requests())
			if err := l.Close(ctx); err != nil {
				t.Fatal(err)
			}
			before := len(fake.Requests())
			acpxExec(t, bin, cwd, home, agentEnv, "SHAPE-TURN hello")
			own := shapeTurnRequest(t, fake.Requests()[before:])
			// No difference at all (docs/checkpoints.md): Bridge asks the
			// agent for nothing beyond what the preset names.
			if diff := adaptertest.ShapeDiff(adaptertest.ShapeLeaves(bridge), adaptertest.ShapeLeaves(own)); len(diff) > 0 {
				t.Errorf("the turn through Bridge differs from acpx's:\n%s", strings.Join(diff, "\n"))
			}
			if len(bridge) == 0 || bridge["model"] == nil {
				t.Errorf("the turn's request %v has no model: not a model request", bridge)
			}
		})
	}
}
