package codex

import (
	"encoding/json"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// TestE2ERequestShapeCodex: an ordinary turn through Bridge (app-server)
// against the same turn in Codex's own automation mode (`codex exec
// --experimental-json`, what the Codex SDK runs), diffed. The only
// differences are those docs/checkpoints.md lists, each switched off by
// its preset member: the update_plan tool and its planning instructions
// (planTools: false), the permissions instructions of Bridge's asking
// approval policy (approvalRelay: false); and the request's client
// metadata, which names the client and is not conversation.
func TestE2ERequestShapeCodex(t *testing.T) {
	env := newE2E(t)
	ctx := ctxT(t)
	env.model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) { return fakemodel.Reply{Text: "SHAPE-REPLY"}, true })
	h := New(env.cfg)
	turn := func(p core.Preset) map[string]any {
		l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: env.cwd, Preset: p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close(ctx)
		if _, err := l.Prompt(ctx, text("SHAPE-TURN hello")); err != nil {
			t.Fatal(err)
		}
		return lastRequestBody(t, env.model)
	}
	off := false
	full := turn(core.Preset{})
	noRelay := turn(core.Preset{ApprovalRelay: &off})
	bare := turn(core.Preset{ApprovalRelay: &off, PlanTools: &off})

	bin, _ := h.binary()
	cmd := exec.CommandContext(ctx, bin, "exec", "--experimental-json", "--skip-git-repo-check", "-C", env.cwd, "SHAPE-TURN hello")
	cmd.Env = h.environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("codex exec: %v\n%s", err, out)
	}
	sdk := lastRequestBody(t, env.model)

	const (
		meta        = "differs: .client_metadata.x-codex-turn-metadata"
		planTool    = "bridge only: .tools[update_plan]"
		instruction = "differs: .input[0].content[0].text" // the developer message: planning section
		permissions = "differs: .input[1].content[1].text" // the permissions instructions
	)
	for _, c := range []struct {
		name string
		got  map[string]any
		want []string
	}{
		{"Bridge's default", full, []string{planTool, meta, instruction, permissions}},
		{"approvalRelay false", noRelay, []string{planTool, meta, instruction}},
		{"approvalRelay and planTools false", bare, []string{meta}},
	} {
		full := adaptertest.ShapeDiff(adaptertest.ShapeLeaves(c.got), adaptertest.ShapeLeaves(sdk))
		var got []string
		for _, d := range full {
			got = append(got, strings.SplitN(d, ": bridge ", 2)[0]) // the path, not the values
		}
		want := append([]string(nil), c.want...)
		sort.Strings(want)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s against codex exec:\n%s\nwant only:\n%s", c.name, strings.Join(full, "\n"), strings.Join(want, "\n"))
		}
	}
	// What the differing texts say.
	if dev := inputText(full, 0, 0); !strings.Contains(dev, "`update_plan` tool") || strings.Contains(inputText(sdk, 0, 0), "`update_plan` tool") {
		t.Errorf("the planning instructions should come with Bridge's plan tool only")
	}
	if p := inputText(full, 1, 1); !strings.Contains(p, "unless-trusted") || strings.Contains(inputText(noRelay, 1, 1), "unless-trusted") {
		t.Errorf("the asking approval policy should show in the permissions instructions of Bridge's default only")
	}
}

// lastRequestBody is the decoded body of the model server's last request.
func lastRequestBody(t *testing.T, m *fakemodel.Server) map[string]any {
	t.Helper()
	rs := m.Requests()
	if len(rs) == 0 {
		t.Fatal("no model request")
	}
	var body map[string]any
	if err := json.Unmarshal(rs[len(rs)-1].Body, &body); err != nil {
		t.Fatal(err)
	}
	return body
}

// inputText is the text of content part c of input item i ("" when absent).
func inputText(body map[string]any, i, c int) string {
	in, _ := body["input"].([]any)
	if i >= len(in) {
		return ""
	}
	item, _ := in[i].(map[string]any)
	parts, _ := item["content"].([]any)
	if c >= len(parts) {
		return ""
	}
	part, _ := parts[c].(map[string]any)
	s, _ := part["text"].(string)
	return s
}
