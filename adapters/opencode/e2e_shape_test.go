package opencode

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// shapeRequest is the model request of the turn whose prompt holds
// SHAPE-TURN among rs (OpenCode's title request, which quotes the prompt
// too, is told by its system prompt).
func shapeRequest(t *testing.T, rs []fakemodel.Request) map[string]any {
	t.Helper()
	var found *fakemodel.Request
	for i, r := range rs {
		if strings.Contains(r.LastUserText, "SHAPE-TURN") && !strings.Contains(strings.ToLower(string(r.Body)), "title generator") {
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

// TestE2ERequestShapeOpenCode: an ordinary turn through Bridge (the
// server API, as OpenCode's own SDK drives it) against the same turn in
// OpenCode's automation mode, `opencode run --format json`, with the same
// configuration, home and folder (the prompt's words as separate arguments:
// `run` quotes an argument holding a space): the model requests are equal
// apart from ids and the question tool, which `run` denies and the server
// API keeps (docs/checkpoints.md, Ordinary turns).
func TestE2ERequestShapeOpenCode(t *testing.T) {
	bin := adaptertest.FindBinary(t, "opencode")
	model := startModel(t)
	model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		if strings.Contains(strings.ToLower(string(r.Body)), "title generator") {
			return fakemodel.Reply{Text: "A title"}, true
		}
		return fakemodel.Reply{Text: "SHAPE-REPLY"}, true
	})
	home, cwd := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := realHost(t, bin, home, model)
	h.cfg.StartTimeout = 5 * time.Minute // a first start under a new HOME, on a loaded machine
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: cwd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: "SHAPE-TURN hello"}}); err != nil {
		t.Fatal(err)
	}
	bridge := shapeRequest(t, model.Requests())
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}

	before := len(model.Requests())
	rctx, rcancel := context.WithTimeout(ctx, 4*time.Minute)
	defer rcancel()
	cmd := exec.CommandContext(rctx, bin, "run", "--dir", cwd, "--format", "json", "SHAPE-TURN", "hello")
	cmd.Dir = cwd
	env, err := h.cfg.environ()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("opencode run: %v\n%s", err, out)
	}
	own := shapeRequest(t, model.Requests()[before:])

	// The one difference (docs/checkpoints.md): `opencode run` denies its
	// question tool (nobody could answer); the server API keeps it.
	want := []string{"bridge only: .tools[question]"}
	if diff := adaptertest.ShapeDiff(adaptertest.ShapeLeaves(bridge), adaptertest.ShapeLeaves(own)); strings.Join(diff, "\n") != strings.Join(want, "\n") {
		t.Errorf("the turn through Bridge differs from `opencode run`'s:\n%s\nwant only:\n%s", strings.Join(diff, "\n"), strings.Join(want, "\n"))
	}
}
